# docs/: the environment contract between plugin and runtime, and more.
EXTRA_DIST += docs/environment.md
