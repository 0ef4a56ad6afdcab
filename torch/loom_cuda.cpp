/* torch/loom_cuda.cpp: the group's CUDA streams and their ordering after
 * torch's (the model is in loom_cuda.hpp). */
#include "loom_pg.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#ifdef LOOM_TORCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace loomtorch {

loom_backend_t world_backend(const char *env, bool nccl_built, size_t gpus)
{
	if (env && *env)
		return LOOM_BACKEND_AUTO;
	return nccl_built && gpus > 0 ? LOOM_BACKEND_NCCL : LOOM_BACKEND_NATIVE;
}

std::string device_refusal(const c10::Device &dev, int comm_device, const char *backend)
{
	std::string on = "a tensor on " + dev.str();
	if (dev.is_cpu())
		return "";
	if (!dev.is_cuda())
		return on + ": this process group takes CPU and CUDA tensors";
	if (comm_device < 0)
		return on + ": libloom's world runs on the " + std::string(backend ? backend : "?") +
		       " backend, which takes CPU tensors; CUDA tensors go to loom's NCCL backend, "
		       "which needs libloom built with NCCL, a GPU torch sees when the first group "
		       "forms, and LOOM_BACKEND unset or nccl";
	if (dev.index() != comm_device)
		return on + ": the group's NCCL communicator is on cuda:" + std::to_string(comm_device) +
		       " (LOOM_LOCAL_DEVICE, else LOCAL_RANK, when the group formed): call "
		       "torch.cuda.set_device(LOCAL_RANK) before init_process_group and keep the "
		       "group's tensors there";
	return "";
}

#ifdef LOOM_TORCH_CUDA

static void cuda_check(const char *op, const char *call, cudaError_t e)
{
	if (e != cudaSuccess) {
		cudaGetLastError();
		fail(op, std::string(call) + " failed: " + cudaGetErrorString(e));
	}
}

void CudaLink::attach(const char *op, const std::vector<loom_comm_t *> &comms)
{
	int dev = comms.empty() ? -1 : loom_comm_device(comms[0]);
	if (dev < 0)
		return;
	int prev = 0;
	cuda_check(op, "cudaGetDevice", cudaGetDevice(&prev));
	cuda_check(op, "cudaSetDevice", cudaSetDevice(dev));
	device_ = dev;
	try {
		cudaEvent_t ev;
		cuda_check(op, "cudaEventCreateWithFlags",
			   cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
		event_ = ev;
		for (auto *c : comms) {
			cudaStream_t s;
			cuda_check(op, "cudaStreamCreateWithFlags",
				   cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
			streams_.emplace_back(c, s);
			check_status(op, "loom_comm_set_stream", loom_comm_set_stream(c, s));
		}
	} catch (...) {
		cudaSetDevice(prev);
		detach();
		throw;
	}
	cudaSetDevice(prev);
}

void CudaLink::detach()
{
	for (auto &cs : streams_) {
		loom_comm_set_stream(cs.first, nullptr);
		cudaStreamDestroy((cudaStream_t)cs.second);
	}
	streams_.clear();
	if (event_)
		cudaEventDestroy((cudaEvent_t)event_);
	event_ = nullptr;
	device_ = -1;
}

void CudaLink::order_after_torch(const char *op, const c10::Device &dev, loom_comm_t *comm)
{
	void *stream = nullptr;
	for (auto &cs : streams_)
		if (cs.first == comm)
			stream = cs.second;
	if (!stream)
		fail(op, "no CUDA stream for this communicator (a CUDA tensor on a group that "
			 "runs on the host)");
	const auto *g = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
	std::lock_guard<std::mutex> l(m_);
	/* records our event on torch's current stream of dev; the wait
	 * takes the event as recorded now, so one event serves every call */
	void *ev = event_;
	g->record(&ev, g->getStream(dev), dev.index(), c10::EventFlag::PYTORCH_DEFAULT);
	event_ = ev;
	cuda_check(op, "cudaStreamWaitEvent",
		   cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)ev, 0));
}

#else /* libloom without CUDA: no communicator has a device */

void CudaLink::attach(const char *, const std::vector<loom_comm_t *> &)
{
}

void CudaLink::detach()
{
}

void CudaLink::order_after_torch(const char *op, const c10::Device &dev, loom_comm_t *)
{
	fail(op, device_refusal(dev, -1, "native"));
}

#endif

void CudaLink::finish_current(const c10::Device &dev)
{
	const auto *g = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
	g->synchronizeStream(g->getStream(dev));
}

} // namespace loomtorch
