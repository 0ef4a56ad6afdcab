/* torch/loom_module.cpp: loom._c10d, the Python extension that gives the
 * loom process group to Python (loom/torch.py registers it with
 * torch.distributed). The class derives from torch's own ProcessGroup
 * binding, so torch.distributed takes it as any other process group. */
#include <torch/extension.h>

#include "loom_pg.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_c10d, m)
{
	m.doc() = "The c10d process group \"loom\" over libloom (see loom.torch)";
	/* the base class's binding must be registered first */
	py::module::import("torch.distributed");
	py::class_<loomtorch::ProcessGroupLoom, c10::intrusive_ptr<loomtorch::ProcessGroupLoom>,
		   c10d::ProcessGroup>(m, "ProcessGroupLoom")
		.def(py::init<int, int, double, std::vector<int64_t>>(), py::arg("rank"),
		     py::arg("size"), py::arg("timeout"), py::arg("ranks") = std::vector<int64_t>(),
		     py::call_guard<py::gil_scoped_release>())
		.def_property_readonly("bootstrap", &loomtorch::ProcessGroupLoom::bootstrap,
				       "how libloom formed its world: pmix, env, single")
		.def("transport", &loomtorch::ProcessGroupLoom::transport, py::arg("peer"),
		     "what carries messages to peer: self, shm, tcp")
		.def_property_readonly("loom_backend", &loomtorch::ProcessGroupLoom::backend,
				       "libloom's backend under the group: native, nccl, mpi")
		.def_property_readonly("device", &loomtorch::ProcessGroupLoom::device,
				       "the CUDA device of the group's CUDA tensors; -1: CPU only");
	m.def("have_world", &loomtorch::ProcessGroupLoom::have_world,
	      "whether a loom process group of this process holds libloom's world");
	m.def("world_size", &loomtorch::ProcessGroupLoom::world_size,
	      "the size of that world, 0 without one");
	m.def("split_out", &loomtorch::ProcessGroupLoom::split_out,
	      "a rank outside a new group of a subset: its part of the split of the world",
	      py::call_guard<py::gil_scoped_release>());
	py::class_<loomtorch::WorldDup>(m, "WorldDup",
		"a duplicate of the world's communicator that keeps the world alive")
		.def(py::init<>(), py::call_guard<py::gil_scoped_release>())
		.def_property_readonly("address", &loomtorch::WorldDup::address)
		.def("free", &loomtorch::WorldDup::free);
	/* torch 1.13's dispatcher hands a process group CPU and CUDA tensors
	 * only: tests reach the check every operation makes first with a
	 * meta tensor */
	m.def("_check_device", [](const std::string &op, const at::Tensor &t) {
		loomtorch::check_dense(op.c_str(), t);
	}, "the device check of every operation (tests)");
	/* a CPU-only torch makes no CUDA tensor, but names CUDA devices:
	 * the choices made for CUDA tensors are reached directly too */
	m.def("_device_refusal", [](const std::string &dev, int comm_device, const std::string &be) {
		return loomtorch::device_refusal(c10::Device(dev), comm_device, be.c_str());
	}, "why a tensor on dev cannot go to a group on comm_device, or \"\" (tests)");
	m.def("_world_backend", [](py::object env, bool nccl_built, size_t gpus) {
		std::string e = env.is_none() ? "" : env.cast<std::string>();
		switch (loomtorch::world_backend(env.is_none() ? nullptr : e.c_str(), nccl_built, gpus)) {
		case LOOM_BACKEND_NCCL: return std::string("nccl");
		case LOOM_BACKEND_NATIVE: return std::string("native");
		default: return std::string("LOOM_BACKEND");
		}
	}, "the backend the first group forms libloom's world on (tests)");
	m.def("_backend_built", [](const std::string &be) {
		return loom_backend_built(be == "nccl" ? LOOM_BACKEND_NCCL :
					  be == "mpi" ? LOOM_BACKEND_MPI : LOOM_BACKEND_NATIVE) != 0;
	}, "whether libloom has the backend nccl, mpi or native");
	m.def("library_version", []() { return std::string(loom_version()); });
}
