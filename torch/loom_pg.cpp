/* torch/loom_pg.cpp: the operations of the loom process group (the
 * model is in loom_pg.hpp): check, stage, start loom's non-blocking
 * calls, queue the Work. Data-movement operations send bytes (any
 * dtype); reductions need one of loom's dtypes. */
#include "loom_pg.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace loomtorch {

using c10d::OpType;

namespace {

/* t itself when contiguous, else a contiguous copy of it */
at::Tensor in_buf(const at::Tensor &t)
{
	return t.is_contiguous() ? t : t.contiguous();
}

/* where loom writes t's result: t itself when contiguous, else a
 * contiguous tensor that Work::after copies back */
at::Tensor out_buf(const at::Tensor &t)
{
	return t.is_contiguous() ? t : at::empty(t.sizes(), t.options());
}

size_t nbytes(const at::Tensor &t)
{
	return (size_t)t.numel() * t.element_size();
}

void one(const char *op, const std::vector<at::Tensor> &ts)
{
	if (ts.size() != 1)
		fail(op, "takes one tensor per process, got " + std::to_string(ts.size()));
	check_dense(op, ts[0]);
}

void same_kind(const char *op, const at::Tensor &a, const at::Tensor &b, int64_t numel)
{
	check_dense(op, a);
	if (a.device() != b.device())
		fail(op, "tensors on " + a.device().str() + " and " + b.device().str() +
			 " in one call: put them on one device");
	if (a.scalar_type() != b.scalar_type())
		fail(op, std::string("tensors of different dtypes: ") + c10::toString(a.scalar_type()) +
			 " and " + c10::toString(b.scalar_type()));
	if (a.numel() != numel)
		fail(op, "a tensor of " + std::to_string(a.numel()) + " elements where " +
			 std::to_string(numel) + " are expected");
}

void check_root(const char *op, int64_t root, int size)
{
	if (root < 0 || root >= size)
		fail(op, "root rank " + std::to_string(root) + " is not in the group of " +
			 std::to_string(size));
}

/* t's result back from its staging buffer b, when they differ */
std::function<void()> copy_back(const at::Tensor &t, const at::Tensor &b)
{
	if (b.is_same(t))
		return nullptr;
	return [t, b]() mutable { t.copy_(b); };
}

/* several such steps, in order */
std::function<void()> all_of(std::vector<std::function<void()>> fs)
{
	std::vector<std::function<void()>> some;
	for (auto &f : fs)
		if (f)
			some.push_back(std::move(f));
	if (some.empty())
		return nullptr;
	return [some]() {
		for (auto &f : some)
			f();
	};
}

/* the tensors of list flattened into one contiguous tensor, and the
 * step that writes its slices back into them */
at::Tensor flatten(const std::vector<at::Tensor> &list)
{
	std::vector<at::Tensor> flat;
	for (auto &t : list)
		flat.push_back(t.reshape({-1}));
	return at::cat(flat);
}

std::function<void()> unflatten(std::vector<at::Tensor> list, at::Tensor flat)
{
	return [list, flat]() mutable {
		int64_t off = 0;
		for (auto &t : list) {
			t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
			off += t.numel();
		}
	};
}

std::mutex world_lock;
std::weak_ptr<World> the_world;

/* the world this process holds, formed by loom_init when there is none
 * (*fresh says so) */
std::shared_ptr<World> join_world(const char *op, bool *fresh)
{
	std::lock_guard<std::mutex> g(world_lock);
	auto w = the_world.lock();
	*fresh = !w;
	if (w)
		return w;
	w = std::make_shared<World>();
	loom_backend_t be = world_backend(getenv("LOOM_BACKEND"),
		loom_backend_built(LOOM_BACKEND_NCCL), at::getNumGPUs());
	int rc = loom_init_backend(be, &w->comm);
	if (rc != LOOM_SUCCESS && be == LOOM_BACKEND_NCCL)
		fail(op, std::string("loom_init on the NCCL backend (chosen because torch sees a GPU) "
				     "failed: ") + loom_strerror(rc) + "; loom's log line says why, and "
			 "LOOM_BACKEND=native keeps the group on the host");
	check_status(op, "loom_init", rc);
	the_world = w;
	return w;
}

/* the world, or a RuntimeError: op needs a group that formed it */
std::shared_ptr<World> held_world(const char *op)
{
	auto w = [] {
		std::lock_guard<std::mutex> g(world_lock);
		return the_world.lock();
	}();
	if (!w)
		fail(op, "no loom process group of this process holds libloom's world "
			 "(init_process_group(\"loom\") first)");
	return w;
}

/* a member's part of the split of world into the group of ranks */
loom_comm_t *split_in(const char *op, loom_comm_t *world, const std::vector<int64_t> &ranks)
{
	int me = loom_comm_rank(world), ws = loom_comm_size(world);
	int64_t key = -1;
	for (size_t i = 0; i < ranks.size(); i++) {
		if (ranks[i] < 0 || ranks[i] >= ws || (i && ranks[i] <= ranks[i - 1]))
			fail(op, "the group's ranks must be distinct ranks of the world of " +
				 std::to_string(ws) + ", ascending");
		if (ranks[i] == me)
			key = (int64_t)i;
	}
	if (key < 0)
		fail(op, "this process, rank " + std::to_string(me) + ", is not in the group");
	loom_comm_t *c = nullptr;
	check_status(op, "loom_comm_split", loom_comm_split(world, 0, (int)key, &c));
	return c;
}

} // namespace

ProcessGroupLoom::ProcessGroupLoom(int rank, int size, double timeout_s, std::vector<int64_t> ranks)
	: c10d::ProcessGroup(rank, size)
{
	bool fresh;
	world_ = join_world("init_process_group", &fresh);
	const char *op = fresh ? "init_process_group" : "new_group";
	loom_comm_t *wc = world_->comm;
	if (!ranks.empty() && (int)ranks.size() != loom_comm_size(wc))
		coll_ = split_in(op, wc, ranks);
	else if (fresh)
		coll_ = wc;
	else
		check_status(op, "loom_comm_dup", loom_comm_dup(wc, &coll_));
	int cr = loom_comm_rank(coll_), cs = loom_comm_size(coll_);
	if (cr != rank || cs != size)
		fail(op, "libloom's communicator has this process as rank " + std::to_string(cr) +
			 " of " + std::to_string(cs) + ", torch says rank " + std::to_string(rank) +
			 " of " + std::to_string(size));
	check_status(op, "loom_comm_dup", loom_comm_dup(coll_, &pcoll_));
	check_status(op, "loom_comm_dup", loom_comm_dup(coll_, &p2p_));
	loom_comm_set_name(pcoll_, "torch-p2p-coll");
	loom_comm_set_name(p2p_, "torch-send-recv");
	for (auto *c : {coll_, pcoll_, p2p_})
		check_status(op, "loom_comm_set_timeout", loom_comm_set_timeout(c, timeout_s));
	cuda_.attach(op, {coll_, p2p_});
	progress_ = std::make_shared<Progress>();
	p2p_progress_ = std::make_shared<Progress>();
	init();
}

ProcessGroupLoom::~ProcessGroupLoom()
{
	{
		std::lock_guard<std::mutex> g(live_m_);
		for (auto &x : live_)
			if (auto w = x.lock())
				w->drive();
		live_.clear();
	}
	progress_.reset();
	p2p_progress_.reset();
	cuda_.detach();
	for (auto *c : {pcoll_, p2p_})
		if (c)
			loom_comm_free(c);
	if (coll_ && coll_ != world_->comm)
		loom_comm_free(coll_);
}

bool ProcessGroupLoom::have_world()
{
	std::lock_guard<std::mutex> g(world_lock);
	return !the_world.expired();
}

int ProcessGroupLoom::world_size()
{
	std::lock_guard<std::mutex> g(world_lock);
	auto w = the_world.lock();
	return w ? loom_comm_size(w->comm) : 0;
}

void ProcessGroupLoom::split_out()
{
	const char *op = "new_group";
	auto w = held_world(op);
	loom_comm_t *c = nullptr;
	check_status(op, "loom_comm_split", loom_comm_split(w->comm, LOOM_UNDEFINED, 0, &c));
	if (c)
		loom_comm_free(c);
}

WorldDup::WorldDup() : world_(held_world("cpu_world"))
{
	check_status("cpu_world", "loom_comm_dup", loom_comm_dup(world_->comm, &comm_));
	loom_comm_set_name(comm_, "cpu-world");
}

void WorldDup::free()
{
	if (comm_)
		loom_comm_free(comm_);
	comm_ = nullptr;
	world_.reset();
}

std::string ProcessGroupLoom::bootstrap() const
{
	const char *b = loom_comm_bootstrap(coll_);
	return b ? b : "";
}

std::string ProcessGroupLoom::backend() const
{
	const char *b = loom_comm_backend(coll_);
	return b ? b : "";
}

std::string ProcessGroupLoom::transport(int peer) const
{
	const char *t = loom_comm_peer_transport(coll_, peer);
	return t ? t : "";
}

c10::intrusive_ptr<WorkLoom> ProcessGroupLoom::work(OpType type, const char *name,
	std::vector<at::Tensor> outputs, bool user_p2p)
{
	auto w = c10::make_intrusive<WorkLoom>(rank_, type, name, std::move(outputs),
		user_p2p ? p2p_progress_ : progress_);
	track(w);
	return w;
}

/* amortised: the list is pruned of dropped Works when it doubles */
void ProcessGroupLoom::track(const c10::intrusive_ptr<WorkLoom> &w)
{
	std::lock_guard<std::mutex> g(live_m_);
	if (live_.size() >= live_cap_) {
		live_.erase(std::remove_if(live_.begin(), live_.end(),
			[](const c10::weak_intrusive_ptr<WorkLoom> &x) { return x.expired(); }), live_.end());
		live_cap_ = std::max<size_t>(64, 2 * live_.size());
	}
	live_.emplace_back(w);
}

void ProcessGroupLoom::post(WorkLoom &w, loom_comm_t *c, bool is_send, const at::Tensor &t, int peer)
{
	loom_request_t *q = nullptr;
	size_t n = nbytes(t);
	if (n == 0)
		return;
	if (is_send)
		check_status(w.name, "loom_isend", loom_isend(t.data_ptr(), n, LOOM_INT8, peer, c, &q));
	else
		check_status(w.name, "loom_irecv", loom_irecv(t.data_ptr(), n, LOOM_INT8, peer, c, &q));
	w.reqs.push_back(q);
	w.keep.push_back(t);
}

void ProcessGroupLoom::place(WorkLoom &w, const at::Tensor &t, loom_comm_t *c)
{
	w.device = t.device();
	if (!w.device.is_cuda())
		return;
	std::string why = device_refusal(w.device, cuda_.device(), loom_comm_backend(c));
	if (!why.empty())
		fail(w.name, why);
	cuda_.order_after_torch(w.name, w.device, c);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::broadcast(std::vector<at::Tensor> &tensors,
	const c10d::BroadcastOptions &opts)
{
	const char *op = "broadcast";
	one(op, tensors);
	check_root(op, opts.rootRank, size_);
	auto &t = tensors[0];
	auto b = in_buf(t);
	auto w = work(OpType::BROADCAST, op, tensors);
	place(*w, b, coll_);
	loom_request_t *q;
	check_status(op, "loom_ibroadcast", loom_ibroadcast(b.data_ptr(), b.data_ptr(), nbytes(b),
		LOOM_INT8, (int)opts.rootRank, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b};
	w->after = copy_back(t, b);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allreduce(std::vector<at::Tensor> &tensors,
	const c10d::AllreduceOptions &opts)
{
	const char *op = "allreduce";
	one(op, tensors);
	auto &t = tensors[0];
	loom_dtype_t dt = reduce_dtype(op, t);
	loom_op_t lop = reduce_op(op, opts.reduceOp);
	auto b = in_buf(t);
	auto w = work(OpType::ALLREDUCE, op, tensors);
	place(*w, b, coll_);
	loom_request_t *q;
	check_status(op, "loom_iallreduce", loom_iallreduce(b.data_ptr(), b.data_ptr(),
		(size_t)b.numel(), dt, lop, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b};
	w->after = copy_back(t, b);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allreduce_coalesced(std::vector<at::Tensor> &tensors,
	const c10d::AllreduceCoalescedOptions &opts)
{
	const char *op = "allreduce_coalesced";
	if (tensors.empty())
		fail(op, "no tensors");
	for (auto &t : tensors)
		same_kind(op, t, tensors[0], t.numel());
	loom_dtype_t dt = reduce_dtype(op, tensors[0]);
	loom_op_t lop = reduce_op(op, opts.reduceOp);
	auto flat = flatten(tensors);
	auto w = work(OpType::ALLREDUCE_COALESCED, op, tensors);
	place(*w, flat, coll_);
	loom_request_t *q;
	check_status(op, "loom_iallreduce", loom_iallreduce(flat.data_ptr(), flat.data_ptr(),
		(size_t)flat.numel(), dt, lop, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {flat};
	w->after = unflatten(tensors, flat);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::reduce(std::vector<at::Tensor> &tensors,
	const c10d::ReduceOptions &opts)
{
	const char *op = "reduce";
	one(op, tensors);
	check_root(op, opts.rootRank, size_);
	auto &t = tensors[0];
	loom_dtype_t dt = reduce_dtype(op, t);
	loom_op_t lop = reduce_op(op, opts.reduceOp);
	auto b = in_buf(t);
	auto w = work(OpType::REDUCE, op, tensors);
	place(*w, b, coll_);
	loom_request_t *q;
	check_status(op, "loom_ireduce", loom_ireduce(b.data_ptr(), b.data_ptr(), (size_t)b.numel(),
		dt, lop, (int)opts.rootRank, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b};
	if (rank_ == opts.rootRank)
		w->after = copy_back(t, b);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::allgather(std::vector<std::vector<at::Tensor>> &outputs,
	std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &)
{
	const char *op = "allgather";
	one(op, inputs);
	auto &in = inputs[0];
	if (outputs.size() != 1 || outputs[0].size() != (size_t)size_)
		fail(op, "wants one list of " + std::to_string(size_) + " output tensors");
	for (auto &o : outputs[0])
		same_kind(op, o, in, in.numel());
	auto b = in_buf(in);
	auto flat = at::empty({size_ * in.numel()}, in.options());
	auto w = work(OpType::ALLGATHER, op, outputs[0]);
	place(*w, flat, coll_);
	loom_request_t *q;
	check_status(op, "loom_iallgather", loom_iallgather(b.data_ptr(), flat.data_ptr(), nbytes(b),
		LOOM_INT8, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b, flat};
	w->after = unflatten(outputs[0], flat);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::_allgather_base(at::Tensor &output, at::Tensor &input,
	const c10d::AllgatherOptions &)
{
	const char *op = "_allgather_base";
	check_dense(op, input);
	same_kind(op, output, input, size_ * input.numel());
	auto b = in_buf(input);
	auto o = out_buf(output);
	auto w = work(OpType::_ALLGATHER_BASE, op, {output});
	place(*w, o, coll_);
	loom_request_t *q;
	check_status(op, "loom_iallgather", loom_iallgather(b.data_ptr(), o.data_ptr(), nbytes(b),
		LOOM_INT8, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b, o};
	w->after = copy_back(output, o);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::reduce_scatter(std::vector<at::Tensor> &outputs,
	std::vector<std::vector<at::Tensor>> &inputs, const c10d::ReduceScatterOptions &opts)
{
	const char *op = "reduce_scatter";
	one(op, outputs);
	auto &out = outputs[0];
	if (inputs.size() != 1 || inputs[0].size() != (size_t)size_)
		fail(op, "wants one list of " + std::to_string(size_) + " input tensors");
	for (auto &i : inputs[0])
		same_kind(op, i, out, out.numel());
	loom_dtype_t dt = reduce_dtype(op, out);
	loom_op_t lop = reduce_op(op, opts.reduceOp);
	auto flat = flatten(inputs[0]);
	auto o = out_buf(out);
	auto w = work(OpType::REDUCE_SCATTER, op, outputs);
	place(*w, o, coll_);
	loom_request_t *q;
	check_status(op, "loom_ireduce_scatter", loom_ireduce_scatter(flat.data_ptr(), o.data_ptr(),
		(size_t)out.numel(), dt, lop, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {flat, o};
	w->after = copy_back(out, o);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::_reduce_scatter_base(at::Tensor &output,
	at::Tensor &input, const c10d::ReduceScatterOptions &opts)
{
	const char *op = "_reduce_scatter_base";
	check_dense(op, output);
	same_kind(op, input, output, size_ * output.numel());
	loom_dtype_t dt = reduce_dtype(op, output);
	loom_op_t lop = reduce_op(op, opts.reduceOp);
	auto b = in_buf(input);
	auto o = out_buf(output);
	auto w = work(OpType::_REDUCE_SCATTER_BASE, op, {output});
	place(*w, o, coll_);
	loom_request_t *q;
	check_status(op, "loom_ireduce_scatter", loom_ireduce_scatter(b.data_ptr(), o.data_ptr(),
		(size_t)output.numel(), dt, lop, coll_, &q));
	w->reqs.push_back(q);
	w->keep = {b, o};
	w->after = copy_back(output, o);
	return start(w);
}

/* split sizes count rows (dim 0); empty: equal splits */
static std::vector<int64_t> splits(const char *op, const at::Tensor &t, const std::vector<int64_t> &s,
	int size, const char *which)
{
	int64_t rows = t.dim() ? t.size(0) : 1;
	if (s.empty()) {
		if (rows % size)
			fail(op, std::string(which) + " has " + std::to_string(rows) +
				 " rows, not a multiple of the group's size");
		return std::vector<int64_t>(size, rows / size);
	}
	if (s.size() != (size_t)size)
		fail(op, std::string(which) + " split sizes: " + std::to_string(s.size()) +
			 " of them for a group of " + std::to_string(size));
	if (std::accumulate(s.begin(), s.end(), int64_t(0)) != rows)
		fail(op, std::string(which) + " split sizes do not add up to its " +
			 std::to_string(rows) + " rows");
	return s;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::alltoall_base(at::Tensor &output, at::Tensor &input,
	std::vector<int64_t> &outputSplits, std::vector<int64_t> &inputSplits,
	const c10d::AllToAllOptions &)
{
	const char *op = "alltoall_base";
	check_dense(op, input);
	check_dense(op, output);
	if (input.scalar_type() != output.scalar_type())
		fail(op, "input and output of different dtypes");
	if (input.device() != output.device())
		fail(op, "input on " + input.device().str() + ", output on " + output.device().str());
	if (!outputSplits.empty() || !inputSplits.empty())
		host_only("alltoall_base with split sizes", input);
	auto b = in_buf(input);
	auto o = out_buf(output);
	auto w = work(OpType::ALLTOALL_BASE, op, {output});
	w->keep = {b, o};
	w->after = copy_back(output, o);
	if (outputSplits.empty() && inputSplits.empty()) {
		same_kind(op, output, input, input.numel());
		if (input.numel() % size_)
			fail(op, std::to_string(input.numel()) + " elements do not split in " +
				 std::to_string(size_) + " equal blocks");
		loom_request_t *q;
		place(*w, o, coll_);
		check_status(op, "loom_ialltoall", loom_ialltoall(b.data_ptr(), o.data_ptr(),
			nbytes(b) / size_, LOOM_INT8, coll_, &q));
		w->reqs.push_back(q);
		return start(w);
	}
	auto is = splits(op, b, inputSplits, size_, "input");
	auto os = splits(op, o, outputSplits, size_, "output");
	int64_t irow = b.size(0) ? b.numel() / b.size(0) : 0, orow = o.size(0) ? o.numel() / o.size(0) : 0;
	if (irow && orow && irow != orow)
		fail(op, "input and output rows of different sizes");
	int64_t ioff = 0, ooff = 0;
	for (int j = 0; j < size_; j++) {
		auto src = b.narrow(0, ioff, is[j]), dst = o.narrow(0, ooff, os[j]);
		if (j == rank_) {
			if (src.numel() != dst.numel())
				fail(op, "this rank's own block: " + std::to_string(src.numel()) +
					 " elements in, " + std::to_string(dst.numel()) + " out");
			dst.copy_(src);
		} else {
			post(*w, pcoll_, false, dst, j);
			post(*w, pcoll_, true, src, j);
		}
		ioff += is[j];
		ooff += os[j];
	}
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::alltoall(std::vector<at::Tensor> &outputs,
	std::vector<at::Tensor> &inputs, const c10d::AllToAllOptions &)
{
	const char *op = "alltoall";
	if (outputs.size() != (size_t)size_ || inputs.size() != (size_t)size_)
		fail(op, "wants lists of " + std::to_string(size_) + " tensors");
	auto w = work(OpType::ALLTOALL, op, outputs);
	std::vector<std::function<void()>> backs;
	for (int j = 0; j < size_; j++) {
		check_dense(op, inputs[j]);
		host_only(op, inputs[j]);
		same_kind(op, outputs[j], inputs[j], outputs[j].numel());
		auto src = in_buf(inputs[j]), dst = out_buf(outputs[j]);
		if (j == rank_) {
			if (src.numel() != dst.numel())
				fail(op, "this rank's own block: different sizes in and out");
			dst.copy_(src);
		} else {
			post(*w, pcoll_, false, dst, j);
			post(*w, pcoll_, true, src, j);
		}
		w->keep.push_back(dst);
		backs.push_back(copy_back(outputs[j], dst));
	}
	w->after = all_of(std::move(backs));
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::gather(std::vector<std::vector<at::Tensor>> &outputs,
	std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts)
{
	const char *op = "gather";
	one(op, inputs);
	host_only(op, inputs[0]);
	check_root(op, opts.rootRank, size_);
	int root = (int)opts.rootRank;
	auto src = in_buf(inputs[0]);
	if (rank_ != root) {
		if (!outputs.empty() && !outputs[0].empty())
			fail(op, "output tensors on a rank that is not the root");
		auto w = work(OpType::GATHER, op, {});
		post(*w, pcoll_, true, src, root);
		return start(w);
	}
	if (outputs.size() != 1 || outputs[0].size() != (size_t)size_)
		fail(op, "wants one list of " + std::to_string(size_) + " output tensors at the root");
	auto w = work(OpType::GATHER, op, outputs[0]);
	std::vector<std::function<void()>> backs;
	for (int j = 0; j < size_; j++) {
		auto &t = outputs[0][j];
		same_kind(op, t, src, src.numel());
		auto dst = out_buf(t);
		if (j == root)
			dst.copy_(src);
		else
			post(*w, pcoll_, false, dst, j);
		w->keep.push_back(dst);
		backs.push_back(copy_back(t, dst));
	}
	w->after = all_of(std::move(backs));
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::scatter(std::vector<at::Tensor> &outputs,
	std::vector<std::vector<at::Tensor>> &inputs, const c10d::ScatterOptions &opts)
{
	const char *op = "scatter";
	one(op, outputs);
	host_only(op, outputs[0]);
	check_root(op, opts.rootRank, size_);
	int root = (int)opts.rootRank;
	auto &out = outputs[0];
	auto dst = out_buf(out);
	auto w = work(OpType::SCATTER, op, outputs);
	w->keep = {dst};
	w->after = copy_back(out, dst);
	if (rank_ != root) {
		if (!inputs.empty() && !inputs[0].empty())
			fail(op, "input tensors on a rank that is not the root");
		post(*w, pcoll_, false, dst, root);
		return start(w);
	}
	if (inputs.size() != 1 || inputs[0].size() != (size_t)size_)
		fail(op, "wants one list of " + std::to_string(size_) + " input tensors at the root");
	for (int j = 0; j < size_; j++) {
		same_kind(op, inputs[0][j], out, out.numel());
		auto src = in_buf(inputs[0][j]);
		if (j == root)
			dst.copy_(src);
		else
			post(*w, pcoll_, true, src, j);
	}
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::barrier(const c10d::BarrierOptions &)
{
	const char *op = "barrier";
	auto w = work(OpType::BARRIER, op, {});
	loom_request_t *q;
	check_status(op, "loom_ibarrier", loom_ibarrier(coll_, &q));
	w->reqs.push_back(q);
	return start(w);
}

static void check_p2p(const char *op, std::vector<at::Tensor> &tensors, int peer, int tag, int size)
{
	one(op, tensors);
	if (tag != 0)
		fail(op, "tag " + std::to_string(tag) + ": loom matches messages by order between "
			 "a pair of ranks, not by tag (use tag 0)");
	if (peer < 0 || peer >= size)
		fail(op, "peer rank " + std::to_string(peer) + " is not in the group of " +
			 std::to_string(size));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::send(std::vector<at::Tensor> &tensors, int dst, int tag)
{
	const char *op = "send";
	check_p2p(op, tensors, dst, tag, size_);
	auto w = work(OpType::SEND, op, {}, true);
	auto b = in_buf(tensors[0]);
	place(*w, b, p2p_);
	post(*w, p2p_, true, b, dst);
	return start(w);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupLoom::recv(std::vector<at::Tensor> &tensors, int src, int tag)
{
	const char *op = "recv";
	check_p2p(op, tensors, src, tag, size_);
	auto &t = tensors[0];
	auto b = out_buf(t);
	auto w = work(OpType::RECV, op, tensors, true);
	place(*w, b, p2p_);
	post(*w, p2p_, false, b, src);
	w->after = copy_back(t, b);
	return start(w);
}

} // namespace loomtorch
