"""A training loop in plain Python (no torch, no numpy) that survives
preemption with loom: StopSignal, agreement through loom.init()'s
allreduce, its own save (a JSON file), request_requeue, resume.

    srun python3 requeue_counter.py STEPS STEP_MS

Step s adds the allreduce sum of s * (rank + 1) to a total; rank 0 ends
with "total T" (for 4 ranks and 100 steps: 10 * 4950 = 49500)."""
import loom

stop = loom.StopSignal()

import array  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402


def save(path, state):
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def main():
    steps, ms = int(sys.argv[1]), float(sys.argv[2])
    world = loom.init()
    path = os.path.join(os.environ["LOOM_CKPT_DIR"], "counter.json")
    state = {"step": -1, "total": 0}
    if os.path.exists(path):
        with open(path) as f:
            state = json.load(f)
        if world.rank == 0:
            print("resuming after step %d (restart %s)" % (
                state["step"], os.environ.get("SLURM_RESTART_COUNT")), flush=True)
    for step in range(state["step"] + 1, steps):
        x = array.array("q", [step * (world.rank + 1)])
        world.allreduce(x)
        state = {"step": step, "total": state["total"] + x[0]}
        time.sleep(ms / 1000)
        if world.rank == 0 and step % 10 == 0:
            print("step %d/%d" % (step, steps), flush=True)
        flag = array.array("i", [1 if stop.requested else 0])
        world.allreduce(flag, op="max")
        if flag[0] and step + 1 < steps:
            if world.rank == 0:
                save(path, state)
                loom.request_requeue(step)
                print("stop signal %s: step %d saved" % (stop.signal, step), flush=True)
            world.barrier()
            return 0
    if world.rank == 0:
        print("total %d on %d ranks" % (state["total"], world.size), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
