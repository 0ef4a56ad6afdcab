# contrib/: plugstack sample, packaging, Kubernetes, monitoring.
EXTRA_DIST += contrib/plugstack.conf.sample
