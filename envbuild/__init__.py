"""Environment builder: a pinned, layered Docker environment per task.

Reads: task directories (`tasks/<task_id>/task.json`) and the framework's repository at each
task's base commit, through the git gateway.
Writes: `env.json` (pins with their provenance, layers and tags), `Dockerfile` (the task layer)
and `docker/base.Dockerfile`, `docker/env.Dockerfile` into each task directory; with `--build`,
images through the Docker SDK and a build log per task.
Refuses: to touch the host's network setup (builds run with network mode `none` by default);
reports a missing engine as one clear error.

Command: `python -m envbuild`.
"""
