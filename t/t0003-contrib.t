#!/bin/sh
# contrib/: Kubernetes manifests lint clean and carry the fields their
# controllers need; the Debian packaging files are complete.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
k8s="$LOOM_SRC_DIR/contrib/kubernetes"

if command -v yamllint >/dev/null 2>&1; then
test_expect_success 'Kubernetes manifests pass yamllint (strict)' '
	yamllint --strict -d "{extends: default, rules: {line-length: {max: 120}, document-start: disable}}" "$k8s"/*.yaml
'
else
	test_skip 'Kubernetes manifests pass yamllint' 'yamllint not installed'
fi
if python3 -c "import yaml" 2>/dev/null; then
test_expect_success 'Kubernetes manifests pass the structural schema check' '
	python3 "$LOOM_SRC_DIR/t/lib/k8s-schema.py" "$k8s"/*.yaml
'
test_expect_success 'the schema check rejects an MPIJob without workers' '
	printf "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: x\nspec:\n  mpiReplicaSpecs:\n    Launcher:\n      template:\n        spec:\n          containers: [{name: l, image: i}]\n" >"$TEST_TMP/bad.yaml" &&
	! python3 "$LOOM_SRC_DIR/t/lib/k8s-schema.py" "$TEST_TMP/bad.yaml" >"$TEST_TMP/err" &&
	grep "MPIJob needs spec.mpiReplicaSpecs.Worker" "$TEST_TMP/err"
'
else
	test_skip 'Kubernetes manifests pass the structural schema check' 'python3-yaml not installed'
fi
test_expect_success 'the Grafana dashboard is valid JSON and queries only series loom writes' '
	python3 - "$LOOM_SRC_DIR/contrib/monitoring/grafana-loom.json" "$LOOM_SRC_DIR/runtime/metrics/metrics.c" <<-\EOF
	import json, re, sys
	dash = json.load(open(sys.argv[1]))
	written = set(re.findall(r"\"(loom_[a-z_]+)\"", open(sys.argv[2]).read()))
	used = set()
	for p in dash["panels"]:
	    for t in p["targets"]:
	        used |= set(re.findall(r"loom_[a-z_]+", t["expr"]))
	assert used, "no loom series used"
	missing = used - written
	assert not missing, "dashboard uses series loom does not write: %s" % missing
	print("ok", sorted(used))
	EOF
'
test_expect_success 'every Debian binary package has an .install file' '
	for p in $(sed -n "s/^Package: //p" "$LOOM_SRC_DIR/contrib/debian/control"); do
		test -s "$LOOM_SRC_DIR/contrib/debian/$p.install" || { echo "no $p.install"; exit 1; }
	done
'
test_done
