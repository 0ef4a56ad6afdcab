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
		     "what carries messages to peer: self, shm, tcp");
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
	 * only, and a CPU-only torch makes no CUDA tensor: tests reach the
	 * check every operation makes first with a meta tensor */
	m.def("_check_device", [](const std::string &op, const at::Tensor &t) {
		loomtorch::check_cpu(op.c_str(), t);
	}, "the device check of every operation (tests)");
	m.def("library_version", []() { return std::string(loom_version()); });
}
