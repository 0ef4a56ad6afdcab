/* torch/loom_cuda.hpp: CUDA tensors on the loom process group.
 *
 * CUDA tensors go to libloom's NCCL backend: the group's world forms on
 * it when libloom has NCCL and torch sees a GPU (world_backend), and
 * its communicators take device memory there (host memory still goes to
 * their native twin). Each group gives its communicators CUDA streams of
 * its own; before an operation is enqueued, that stream waits (on a CUDA
 * event, not on the host) for what torch queued on the tensor's current
 * stream, so the operation reads what the caller's kernels wrote. loom's
 * request completes once the stream has run it, so a Work completes with
 * its results in device memory; a copy back out of a staging buffer is
 * finished before the Work completes.
 *
 * Only the operations loom's NCCL backend runs as one NCCL call take CUDA
 * tensors: gather, scatter and the alltoalls of lists or split sizes are
 * point-to-point exchanges that NCCL would have to group, and raise
 * naming the operation.
 *
 * Compiled against the CUDA runtime when libloom is (LOOM_TORCH_CUDA);
 * torch's side is reached through c10's device-guard interface, so a
 * CPU-only torch builds and links it too. */
#pragma once

#include <c10/core/Device.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <loom.h>

namespace loomtorch {

/* The backend libloom's world forms on under torch: LOOM_BACKEND when it
 * is set (`env`, read again by libloom: LOOM_BACKEND_AUTO), else NCCL
 * when libloom has it and torch sees `gpus` GPUs, else native. */
loom_backend_t world_backend(const char *env, bool nccl_built, size_t gpus);

/* Why a tensor on dev cannot go to a communicator of `backend` whose
 * CUDA device is comm_device (-1: none); "" when it can. */
std::string device_refusal(const c10::Device &dev, int comm_device, const char *backend);

class CudaLink {
 public:
	CudaLink() = default;
	CudaLink(const CudaLink &) = delete;
	CudaLink &operator=(const CudaLink &) = delete;
	~CudaLink() { detach(); }

	/* gives each of comms a stream of its own when they run on NCCL
	 * (else nothing: device() stays -1) */
	void attach(const char *op, const std::vector<loom_comm_t *> &comms);
	/* the comms back on libloom's own stream, the streams destroyed */
	void detach();
	/* the CUDA device of the group's communicators; -1: none */
	int device() const { return device_; }
	/* comm's stream waits for the work torch has queued on dev's
	 * current stream */
	void order_after_torch(const char *op, const c10::Device &dev, loom_comm_t *comm);
	/* the work queued on dev's current stream of this thread, finished */
	static void finish_current(const c10::Device &dev);

 private:
	int device_ = -1;
	std::vector<std::pair<loom_comm_t *, void *>> streams_;
	void *event_ = nullptr;
	std::mutex m_;
};

} // namespace loomtorch
