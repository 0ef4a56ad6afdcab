# contrib/: plugstack sample, packaging, Kubernetes, monitoring.
EXTRA_DIST += contrib/plugstack.conf.sample
EXTRA_DIST += \
	contrib/container/Dockerfile contrib/container/build contrib/container/engine \
	contrib/container/containers.conf contrib/container/loom-sshd \
	contrib/kubernetes/mpijob.yaml \
	contrib/kubernetes/slurm-on-kubernetes.yaml \
	contrib/rpm/loom.spec \
	contrib/debian/control contrib/debian/rules contrib/debian/changelog \
	contrib/debian/copyright contrib/debian/source/format \
	contrib/debian/slurm-spank-loom.install contrib/debian/slurm-spank-loom.docs \
	contrib/debian/libloom0.install contrib/debian/libloom-dev.install \
	contrib/debian/loom-tools.install contrib/debian/python3-loom.install \
	contrib/build-deb contrib/build-rpm contrib/install-deps
EXTRA_DIST += contrib/monitoring/grafana-loom.json contrib/monitoring/README.md
# the image built and run: two containers as two nodes, the MPIJob launcher
dist_check_SCRIPTS += t/t8000-container.t
