/* torch/loom_pg.hpp: the c10d process group "loom", a thin adapter of
 * PyTorch's ProcessGroup over libloom's public API (loom.h).
 *
 * Each operation checks its tensors, stages the non-contiguous ones in
 * contiguous copies, starts loom's non-blocking operations and returns a
 * Work at once. A progress thread per process group waits for the
 * requests in the order they were started (loom completes a
 * communicator's operations in that order), copies staged results back
 * and completes the Work and its Future (DDP communication hooks chain
 * on it), unless a caller of work.wait() got there first and did it. A failed request (timeout, lost peer, mismatch, abort) makes
 * work.wait() raise a RuntimeError naming the operation and loom's
 * verdict; loom's own log line names the ranks that never arrived.
 *
 * Three communicators: the collectives on `coll_`; the collectives
 * loom has no call for (gather, scatter, alltoall with split sizes),
 * built of point-to-point messages, on `pcoll_`; the user's send/recv on
 * `p2p_`, with a progress thread of their own, so that a receive waiting
 * for its sender never holds back a collective's completion.
 *
 * Written against torch 1.13 (Debian 12): ProcessGroup carries the
 * virtual collectives. Torch 2.x moved them to c10d::Backend: the port
 * is the class's base and the creator's signature. */
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <loom.h>

#include "loom_cuda.hpp"

namespace loomtorch {

class Progress;

/* An operation in flight: loom's requests, the tensors they touch (kept
 * alive until completion), what to do once they succeed (copy staged
 * results back) and the tensors the Future is completed with.
 *
 * loom runs the requests in the background; what completes the Work is
 * its first waiter. work.wait() completes it on the caller's thread, so a
 * blocking call costs no thread hand-off beyond loom's own. The progress
 * thread (its `driver`) takes the Work only when someone may wait without
 * driving it: getFuture() (DDP's hooks), wait() with a timeout,
 * isCompleted(), or the Work dropped before it completed. */
class WorkLoom : public c10d::Work {
 public:
	WorkLoom(int rank, c10d::OpType type, const char *name, std::vector<at::Tensor> outputs,
		 std::weak_ptr<Progress> driver);
	~WorkLoom() override;
	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
	std::vector<at::Tensor> result() override;
	bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
	bool isCompleted() override;

	/* true for the one thread that gets to complete the Work */
	bool claim() { return !claimed_.exchange(true); }
	/* wait every request, then complete (the claimant only) */
	void progress();
	/* hand the Work to the progress thread (once) */
	void drive();

	std::vector<loom_request_t *> reqs;
	std::vector<at::Tensor> keep;
	std::function<void()> after;
	const char *name;
	/* where its tensors are: a CUDA Work's Future is one of that device,
	 * and its copies back are finished before it completes */
	c10::Device device{c10::kCPU};

 private:
	void complete_future(const c10::intrusive_ptr<c10::ivalue::Future> &f);

	std::vector<at::Tensor> outputs_;
	std::weak_ptr<Progress> driver_;
	std::atomic<bool> claimed_{false}, driven_{false};
	/* the Future, made on the first getFuture(); done_: completed */
	std::mutex fm_;
	c10::intrusive_ptr<c10::ivalue::Future> future_;
	bool done_ = false;
	std::exception_ptr error_;
};

/* A thread that completes Works in the order they were queued. */
class Progress {
 public:
	Progress();
	~Progress();
	void push(c10::intrusive_ptr<WorkLoom> w);

 private:
	void run();
	std::mutex m_;
	std::condition_variable cv_;
	std::deque<c10::intrusive_ptr<WorkLoom>> q_;
	bool stop_ = false;
	std::thread t_;
};

/* The world formed by loom_init, shared by every process group of this
 * process (and by loom.torch.cpu_world()); finalized when the last one
 * goes. */
struct World {
	loom_comm_t *comm = nullptr;
	~World();
};

/* A duplicate of the world's communicator that keeps the world alive:
 * loom.torch.cpu_world() when the default group is "loom" (no second
 * world, no second rendezvous). Collective over the world. */
class WorldDup {
 public:
	WorldDup();
	~WorldDup() { free(); }
	/* the loom_comm_t * for loom.World (ctypes); 0 once freed */
	uintptr_t address() const { return (uintptr_t)comm_; }
	void free();

 private:
	std::shared_ptr<World> world_;
	loom_comm_t *comm_ = nullptr;
};

class ProcessGroupLoom : public c10d::ProcessGroup {
 public:
	/* rank and size from init_process_group or new_group. The first
	 * group forms libloom's world, of its rank and size. A later group
	 * of every rank is a duplicate of that world; one of a subset,
	 * `ranks` (the members' ranks in the world, ascending), is split
	 * from it: every rank of the world takes part, the others through
	 * split_out(). timeout_s bounds every operation. */
	ProcessGroupLoom(int rank, int size, double timeout_s, std::vector<int64_t> ranks = {});
	~ProcessGroupLoom() override;

	const std::string getBackendName() const override { return "loom"; }
	/* whether a group of this process holds libloom's world now */
	static bool have_world();
	/* the size of that world; 0 without one */
	static int world_size();
	/* a rank of the world outside a new group of a subset: its part of
	 * the split (collective over the world) */
	static void split_out();
	std::string bootstrap() const;
	std::string transport(int peer) const;
	/* the backend of the group's communicators: native, nccl, mpi */
	std::string backend() const;
	/* the CUDA device its CUDA tensors must be on; -1: CPU tensors only */
	int device() const { return cuda_.device(); }

	c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
		const c10d::BroadcastOptions &opts = c10d::BroadcastOptions()) override;
	c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
		const c10d::AllreduceOptions &opts = c10d::AllreduceOptions()) override;
	c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor> &tensors,
		const c10d::AllreduceCoalescedOptions &opts = c10d::AllreduceCoalescedOptions()) override;
	c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
		const c10d::ReduceOptions &opts = c10d::ReduceOptions()) override;
	c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
		std::vector<at::Tensor> &inputs,
		const c10d::AllgatherOptions &opts = c10d::AllgatherOptions()) override;
	c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
		const c10d::AllgatherOptions &opts = c10d::AllgatherOptions()) override;
	c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
		std::vector<at::Tensor> &inputs,
		const c10d::GatherOptions &opts = c10d::GatherOptions()) override;
	c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
		std::vector<std::vector<at::Tensor>> &inputs,
		const c10d::ScatterOptions &opts = c10d::ScatterOptions()) override;
	c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
		std::vector<std::vector<at::Tensor>> &inputs,
		const c10d::ReduceScatterOptions &opts = c10d::ReduceScatterOptions()) override;
	c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
		const c10d::ReduceScatterOptions &opts = c10d::ReduceScatterOptions()) override;
	c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
		std::vector<int64_t> &outputSplits, std::vector<int64_t> &inputSplits,
		const c10d::AllToAllOptions &opts = c10d::AllToAllOptions()) override;
	c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
		std::vector<at::Tensor> &inputs,
		const c10d::AllToAllOptions &opts = c10d::AllToAllOptions()) override;
	c10::intrusive_ptr<c10d::Work> barrier(
		const c10d::BarrierOptions &opts = c10d::BarrierOptions()) override;
	c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override;
	c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override;

 private:
	/* a Work of the collectives' (or the send/recv) progress thread */
	c10::intrusive_ptr<WorkLoom> work(c10d::OpType type, const char *name,
		std::vector<at::Tensor> outputs, bool user_p2p = false);
	/* w, started: loom runs its requests; its waiter completes it */
	c10::intrusive_ptr<c10d::Work> start(c10::intrusive_ptr<WorkLoom> w) { return w; }
	/* p2p exchanges of gather/scatter/alltoall: one isend or irecv */
	void post(WorkLoom &w, loom_comm_t *c, bool is_send, const at::Tensor &t, int peer);
	/* w's tensors are where t is: checked against the group (CPU, or
	 * the CUDA device of its NCCL communicators) and, on CUDA, c's
	 * stream made to wait for torch's; after the staging copies,
	 * before loom's call */
	void place(WorkLoom &w, const at::Tensor &t, loom_comm_t *c);

	/* the Works not yet dropped, driven before the group goes (their
	 * requests end before the communicators are freed) */
	void track(const c10::intrusive_ptr<WorkLoom> &w);
	std::mutex live_m_;
	std::vector<c10::weak_intrusive_ptr<WorkLoom>> live_;
	size_t live_cap_ = 64;

	std::shared_ptr<World> world_;
	loom_comm_t *coll_ = nullptr, *pcoll_ = nullptr, *p2p_ = nullptr;
	CudaLink cuda_;
	/* destroyed first (declared last): waits for what it took; Works
	 * hold them weakly */
	std::shared_ptr<Progress> progress_, p2p_progress_;
};

/* helpers of loom_work.cpp */
[[noreturn]] void fail(const char *op, const std::string &what);
void check_status(const char *op, const char *call, int rc);
/* t is dense, on the CPU or a CUDA device (the group's device is
 * checked when the Work is placed) */
void check_dense(const char *op, const at::Tensor &t);
/* op has no CUDA form in loom (loom_cuda.hpp): t must be on the CPU */
void host_only(const char *op, const at::Tensor &t);
/* loom's dtype for a reduction of t, or a RuntimeError naming t's dtype */
loom_dtype_t reduce_dtype(const char *op, const at::Tensor &t);
loom_op_t reduce_op(const char *op, const c10d::ReduceOp &r);

} // namespace loomtorch
