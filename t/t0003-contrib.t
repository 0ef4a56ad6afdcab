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
# A real Kubernetes client, offline: kubectl's own parser renders the
# manifests (kustomize). `kubectl create --dry-run=client` cannot run
# without an API server: it asks the server's discovery for every kind,
# even ConfigMap ("unable to recognize ...: connection refused").
if command -v kubectl >/dev/null 2>&1; then
test_expect_success 'kubectl renders the Kubernetes manifests offline (kustomize), every object named' '
	mkdir "$TEST_TMP/k" && cp "$k8s"/*.yaml "$TEST_TMP/k/" &&
	printf "resources:\n- mpijob.yaml\n- slurm-on-kubernetes.yaml\n" >"$TEST_TMP/k/kustomization.yaml" &&
	KUBECONFIG=/dev/null kubectl kustomize "$TEST_TMP/k" >"$TEST_TMP/rendered" &&
	python3 - "$TEST_TMP/rendered" >"$TEST_TMP/objects" <<-\EOF &&
	import sys, yaml
	for d in yaml.safe_load_all(open(sys.argv[1])):
	    print(d["apiVersion"], d["kind"], d["metadata"]["name"])
	EOF
	printf "%s\n" "v1 ConfigMap loom-example-job" "v1 ConfigMap loom-plugstack" \
		"kubeflow.org/v2beta1 MPIJob loom-bench" >"$TEST_TMP/want" &&
	diff "$TEST_TMP/want" "$TEST_TMP/objects"
'
else
	test_skip 'kubectl renders the Kubernetes manifests offline' 'kubectl not installed (Debian: kubernetes-client)'
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
test_expect_success 'slurm-spank-loom is pinned to the Slurm release it is built for (deb and rpm)' '
	d="$LOOM_SRC_DIR/contrib/debian" &&
	sed -n "/^Package: slurm-spank-loom/,/^Description/p" "$d/control" >"$TEST_TMP/ssl" &&
	grep -q "slurm-wlm-basic-plugins (>= \${slurm:Release})" "$TEST_TMP/ssl" &&
	grep -q "slurm-wlm-basic-plugins (<< \${slurm:Next})" "$TEST_TMP/ssl" &&
	grep -q "dh_gencontrol -- -Vslurm:Release=.* -Vslurm:Next=" "$d/rules" &&
	grep -q "^Requires: *slurm >= %{slurm_release}, slurm < %{slurm_next}$" "$LOOM_SRC_DIR/contrib/rpm/loom.spec"
'
test_done
