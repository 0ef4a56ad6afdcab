#!/usr/bin/env python3
"""Check contrib/kubernetes manifests against the fields each kind needs.

A small structural schema (not the full OpenAPI one, which is not packaged
for Debian): every document has apiVersion/kind/metadata.name, and the
kinds loom ships carry the fields their controllers require.
Usage: k8s-schema.py FILE...   exits 1 naming the file, document and field.
"""
import sys
import yaml

REQUIRED = {
    ("kubeflow.org/v2beta1", "MPIJob"): [
        "spec.mpiReplicaSpecs.Launcher.template.spec.containers",
        "spec.mpiReplicaSpecs.Worker.template.spec.containers",
        "spec.mpiReplicaSpecs.Worker.replicas",
    ],
    ("v1", "ConfigMap"): ["data"],
}


def get(doc, path):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def check(fname):
    errors = []
    with open(fname) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs:
        errors.append(f"{fname}: no YAML documents")
    for i, doc in enumerate(docs):
        where = f"{fname}: document {i + 1}"
        for field in ("apiVersion", "kind", "metadata.name"):
            if get(doc, field) in (None, ""):
                errors.append(f"{where}: missing {field}")
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key not in REQUIRED:
            errors.append(f"{where}: unexpected kind {key[1]} ({key[0]})")
            continue
        for field in REQUIRED[key]:
            if get(doc, field) in (None, "", []):
                errors.append(f"{where}: {key[1]} needs {field}")
        for c in (get(doc, "spec.mpiReplicaSpecs.Launcher.template.spec.containers") or []) + \
                 (get(doc, "spec.mpiReplicaSpecs.Worker.template.spec.containers") or []):
            if not c.get("image") or not c.get("name"):
                errors.append(f"{where}: every container needs name and image")
    return errors


def main():
    errors = []
    for fname in sys.argv[1:]:
        errors += check(fname)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
