/* torch/loom_work.cpp: the Work of the loom process group, the thread
 * that completes it, and the mapping of torch's dtypes and ReduceOps to
 * loom's (what loom cannot do raises RuntimeError naming it). */
#include "loom_pg.hpp"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

namespace loomtorch {

static const char *status_name(int rc)
{
	switch (rc) {
	case LOOM_ERR_INVALID: return "LOOM_ERR_INVALID";
	case LOOM_ERR_NOMEM: return "LOOM_ERR_NOMEM";
	case LOOM_ERR_SYSTEM: return "LOOM_ERR_SYSTEM";
	case LOOM_ERR_TIMEOUT: return "LOOM_ERR_TIMEOUT";
	case LOOM_ERR_PEER_LOST: return "LOOM_ERR_PEER_LOST";
	case LOOM_ERR_MISMATCH: return "LOOM_ERR_MISMATCH";
	case LOOM_ERR_BOOTSTRAP: return "LOOM_ERR_BOOTSTRAP";
	case LOOM_ERR_UNSUPPORTED: return "LOOM_ERR_UNSUPPORTED";
	case LOOM_ERR_ABORTED: return "LOOM_ERR_ABORTED";
	default: return "loom error";
	}
}

static std::string verdict(int rc)
{
	std::string s = std::string(status_name(rc)) + " (" + loom_strerror(rc) + ")";
	if (rc == LOOM_ERR_TIMEOUT || rc == LOOM_ERR_PEER_LOST)
		s += "; loom's log line on stderr names the ranks that never arrived";
	return s;
}

void fail(const char *op, const std::string &what)
{
	TORCH_CHECK(false, "loom process group: ", op, ": ", what);
}

void check_status(const char *op, const char *call, int rc)
{
	if (rc != LOOM_SUCCESS)
		fail(op, std::string(call) + " failed: " + verdict(rc));
}

void check_dense(const char *op, const at::Tensor &t)
{
	if (!t.device().is_cpu() && !t.device().is_cuda())
		fail(op, device_refusal(t.device(), -1, "native"));
	if (t.layout() != c10::kStrided)
		fail(op, "a sparse tensor: only dense tensors are supported");
}

void host_only(const char *op, const at::Tensor &t)
{
	if (t.device().is_cuda())
		fail(op, "a tensor on " + t.device().str() + ": loom runs " + op +
			 " as point-to-point messages, which its NCCL backend does not group; "
			 "use CPU tensors for it, or the \"nccl\" process group");
}

loom_dtype_t reduce_dtype(const char *op, const at::Tensor &t)
{
	switch (t.scalar_type()) {
	case at::kChar: return LOOM_INT8;
	case at::kInt: return LOOM_INT32;
	case at::kLong: return LOOM_INT64;
	case at::kHalf: return LOOM_FLOAT16;
	case at::kBFloat16: return LOOM_BFLOAT16;
	case at::kFloat: return LOOM_FLOAT32;
	case at::kDouble: return LOOM_FLOAT64;
	default:
		fail(op, std::string("dtype ") + c10::toString(t.scalar_type()) +
			 " has no reduction in loom (it reduces int8/32/64, float16, bfloat16, "
			 "float32/64)");
	}
}

loom_op_t reduce_op(const char *op, const c10d::ReduceOp &r)
{
	switch (r.op_) {
	case c10d::ReduceOp::SUM: return LOOM_SUM;
	case c10d::ReduceOp::AVG: return LOOM_AVG;
	case c10d::ReduceOp::PRODUCT: return LOOM_PROD;
	case c10d::ReduceOp::MIN: return LOOM_MIN;
	case c10d::ReduceOp::MAX: return LOOM_MAX;
	case c10d::ReduceOp::BAND: fail(op, "ReduceOp BAND is not supported by loom");
	case c10d::ReduceOp::BOR: fail(op, "ReduceOp BOR is not supported by loom");
	case c10d::ReduceOp::BXOR: fail(op, "ReduceOp BXOR is not supported by loom");
	case c10d::ReduceOp::PREMUL_SUM: fail(op, "ReduceOp PREMUL_SUM is not supported by loom");
	default: fail(op, "unknown ReduceOp " + std::to_string(int(r.op_)));
	}
}

WorkLoom::WorkLoom(int rank, c10d::OpType type, const char *n, std::vector<at::Tensor> outputs,
	std::weak_ptr<Progress> driver)
	: c10d::Work(rank, type), name(n), outputs_(std::move(outputs)), driver_(std::move(driver))
{
}

/* dropped before it completed: its requests go to the progress thread
 * (in a Work of their own), or are waited here when that has gone */
WorkLoom::~WorkLoom()
{
	if (reqs.empty())
		return;
	auto p = driver_.lock();
	if (!p) {
		for (auto *q : reqs)
			loom_wait(q);
		return;
	}
	auto o = c10::make_intrusive<WorkLoom>(rank_, opType_, name, std::vector<at::Tensor>(),
		std::weak_ptr<Progress>());
	o->reqs = std::move(reqs);
	o->keep = std::move(keep);
	reqs.clear();
	p->push(o);
}

void WorkLoom::drive()
{
	if (driven_.exchange(true))
		return;
	if (auto p = driver_.lock())
		p->push(c10::intrusive_ptr<WorkLoom>::reclaim_copy(this));
	else if (claim())
		progress();
}

static const c10::TypePtr &tensor_list()
{
	static const c10::TypePtr t = c10::ListType::create(c10::TensorType::get());
	return t;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkLoom::getFuture()
{
	c10::intrusive_ptr<c10::ivalue::Future> f;
	bool done;
	{
		std::lock_guard<std::mutex> g(fm_);
		if (future_)
			return future_;
		f = future_ = c10::make_intrusive<c10::ivalue::Future>(tensor_list(),
			device.is_cuda() ? std::vector<c10::Device>{device} : std::vector<c10::Device>());
		done = done_;
	}
	if (done)
		complete_future(f);
	else
		drive();
	return f;
}

void WorkLoom::complete_future(const c10::intrusive_ptr<c10::ivalue::Future> &f)
{
	if (error_)
		f->setError(error_);
	else
		f->markCompleted(c10::IValue(outputs_));
}

std::vector<at::Tensor> WorkLoom::result()
{
	return outputs_;
}

bool WorkLoom::wait(std::chrono::milliseconds timeout)
{
	if (timeout != kNoTimeout)
		drive();
	else if (claim())
		progress();
	return c10d::Work::wait(timeout);
}

bool WorkLoom::isCompleted()
{
	if (!c10d::Work::isCompleted())
		drive();
	return c10d::Work::isCompleted();
}

void WorkLoom::progress()
{
	int first = LOOM_SUCCESS;
	for (auto *q : reqs) {
		int rc = loom_wait(q);
		if (first == LOOM_SUCCESS)
			first = rc;
	}
	reqs.clear();
	std::exception_ptr e;
	try {
		check_status(name, "the operation", first);
		if (after) {
			after();
			if (device.is_cuda())
				CudaLink::finish_current(device);
		}
	} catch (...) {
		e = std::current_exception();
	}
	keep.clear();
	after = nullptr;
	c10::intrusive_ptr<c10::ivalue::Future> f;
	{
		std::lock_guard<std::mutex> g(fm_);
		done_ = true;
		error_ = e;
		f = future_;
	}
	finish(e);
	if (f)
		complete_future(f);
}

Progress::Progress() : t_([this] { run(); })
{
}

Progress::~Progress()
{
	{
		std::lock_guard<std::mutex> g(m_);
		stop_ = true;
	}
	cv_.notify_one();
	t_.join();
}

void Progress::push(c10::intrusive_ptr<WorkLoom> w)
{
	{
		std::lock_guard<std::mutex> g(m_);
		q_.push_back(std::move(w));
	}
	cv_.notify_one();
}

/* drains the queue before it stops, so no request outlives its group */
void Progress::run()
{
	for (;;) {
		c10::intrusive_ptr<WorkLoom> w;
		{
			std::unique_lock<std::mutex> l(m_);
			cv_.wait(l, [this] { return stop_ || !q_.empty(); });
			if (q_.empty())
				return;
			w = std::move(q_.front());
			q_.pop_front();
		}
		if (w->claim())
			w->progress();
	}
}

World::~World()
{
	if (comm)
		loom_finalize(comm);
}

} // namespace loomtorch
