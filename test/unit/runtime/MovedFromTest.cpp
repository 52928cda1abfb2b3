/// \file
/// Handles that refer to nothing: a moved-from DeviceContext or DeviceStream, an empty
/// (default-constructed or moved-from) DeviceFunction, DeviceEvent, DeviceGraph, DeviceGraphExec or
/// DeviceModule. Every use is a LogicError naming the class and the method (they used to
/// dereference a null pointer: SIGSEGV); destroying them and assigning to them stays fine. On
/// every api; CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace ember;

namespace {

/// Runs `f`, expecting a LogicError that names the use: `use of a moved-from <cls> in <method>`
/// (or `use of an empty <cls> ... in <method>`).
template <class F> void expect_use_error(F &&f, const std::string &cls, const std::string &method, bool empty = false) {
    const std::string want = std::string(empty ? "use of an empty " : "use of a moved-from ") + cls;
    try {
        f();
        ADD_FAILURE() << "no LogicError for " << cls << "::" << method;
    } catch (const LogicError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(want), std::string::npos) << msg;
        EXPECT_NE(msg.find(" in " + method), std::string::npos) << "missing ' in " << method << "' in: " << msg;
    }
}

const auto add_one = kernel("moved_add_one", {"v", "n"}, [](Ptr<int32_t> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += 1; });
});

using AddOne = DeviceFunction<Ptr<int32_t>, Int>;

class MovedFromTest : public ember::testing::DeviceTest {};

TEST_P(MovedFromTest, EveryUseOfAMovedFromDeviceContext) {
    DeviceContext a(0, GetParam());
    DeviceContext b = std::move(a);
    auto buf = b.enqueue_create_buffer<int32_t>(4);
    auto host = b.enqueue_create_host_buffer<int32_t>(4);
    DeviceEvent ev = b.create_event();
    AddOne f = b.compile_function(add_one);
    const char *cls = "DeviceContext";
    expect_use_error([&] { (void)a.name(); }, cls, "name");
    expect_use_error([&] { (void)a.api(); }, cls, "api");
    expect_use_error([&] { (void)a.id(); }, cls, "id");
    expect_use_error([&] { (void)a.target(); }, cls, "target");
    expect_use_error([&] { a.synchronize(); }, cls, "synchronize");
    expect_use_error([&] { (void)a.stream(); }, cls, "stream");
    expect_use_error([&] { (void)a.create_stream(); }, cls, "create_stream");
    expect_use_error([&] { (void)a.stream_priority_range(); }, cls, "stream_priority_range");
    expect_use_error([&] { (void)a.create_event(); }, cls, "create_event");
    expect_use_error([&] { a.record_event(ev); }, cls, "record_event");
    expect_use_error([&] { a.enqueue_wait_for(ev); }, cls, "enqueue_wait_for");
    expect_use_error([&] { a.enqueue_wait_for(b); }, cls, "enqueue_wait_for");
    expect_use_error([&] { b.enqueue_wait_for(a); }, cls, "enqueue_wait_for");
    expect_use_error([&] { (void)a.enqueue_create_buffer<int32_t>(4); }, cls, "enqueue_create_buffer");
    expect_use_error([&] { (void)a.enqueue_create_host_buffer<int32_t>(4); }, cls, "enqueue_create_host_buffer");
    expect_use_error([&] { (void)a.create_buffer_sync<int32_t>(4); }, cls, "enqueue_create_buffer");
    expect_use_error([&] { a.enqueue_copy(buf, host); }, cls, "enqueue_copy");
    expect_use_error([&] { a.enqueue_copy_device_to_device(buf, buf); }, cls, "enqueue_copy_device_to_device");
    expect_use_error([&] { a.enqueue_memset(buf, 7); }, cls, "enqueue_memset");
    expect_use_error([&] { a.memset(buf, 7); }, cls, "memset");
    expect_use_error([&] { a.memset_sync(buf, 7); }, cls, "memset_sync");
    expect_use_error([&] { a.memset_d8(buf, 1, 4); }, cls, "memset_d8");
    expect_use_error([&] { a.memset_d32_async(buf, 1, 4); }, cls, "memset_d32_async");
    expect_use_error([&] { a.memset_d16_async(buf, 1, 4, b.stream()); }, cls, "memset_d16_async");
    expect_use_error([&] { (void)a.malloc_host<int32_t>(4); }, cls, "malloc_host");
    expect_use_error([&] { a.free_host(nullptr); }, cls, "free_host");
    expect_use_error([&] { (void)a.create_managed_buffer<int32_t>(4); }, cls, "create_managed_buffer");
    expect_use_error([&] { (void)a.create_host_mapped_buffer<int32_t>(4); }, cls, "create_host_mapped_buffer");
    int32_t mine[4] = {};
    expect_use_error([&] { (void)a.register_host_memory(mine, sizeof mine); }, cls, "register_host_memory");
    expect_use_error([&] { (void)a.map_to_host(buf); }, cls, "map_to_host");
    expect_use_error([&] { (void)a.create_pitched_buffer<float>(4, 4); }, cls, "create_pitched_buffer");
    expect_use_error([&] { a.enqueue_copy_2d(Copy2D{}); }, cls, "enqueue_copy_2d");
    expect_use_error([&] { a.enqueue_copy_3d(Copy3D{}); }, cls, "enqueue_copy_3d");
    expect_use_error([&] { (void)a.can_access(b); }, cls, "can_access");
    expect_use_error([&] { (void)b.can_access(a); }, cls, "can_access");
    expect_use_error([&] { b.enable_peer_access(a); }, cls, "enable_peer_access");
    expect_use_error([&] { (void)a.create_ipc_buffer<int32_t>(4); }, cls, "create_ipc_buffer");
    expect_use_error([&] { (void)a.ipc_handle(buf); }, cls, "ipc_handle");
    expect_use_error([&] { (void)a.get_attribute(DeviceAttribute::warp_size); }, cls, "get_attribute");
    expect_use_error([&] { (void)a.get_memory_info(); }, cls, "get_memory_info");
    expect_use_error([&] { (void)a.get_limit(Limit::stack_size); }, cls, "get_limit");
    expect_use_error([&] { a.set_limit(Limit::printf_fifo_size, 1 << 20); }, cls, "set_limit");
    expect_use_error([&] { (void)a.load_module(ModuleImage::ember_ir("kernel k() {}")); }, cls, "load_module");
    expect_use_error([&] { a.begin_capture(); }, cls, "begin_capture");
    expect_use_error([&] { (void)a.end_capture(); }, cls, "end_capture");
    expect_use_error([&] { (void)a.is_capturing(); }, cls, "is_capturing");
    expect_use_error([&] { (void)a.compile_function(add_one); }, cls, "compile_function");
    expect_use_error([&] { a.enqueue_function(f, buf, 4, grid_dim(1), block_dim(4)); }, cls, "enqueue_function");
    expect_use_error([&] { a.enqueue_function(add_one, buf, 4, grid_dim(1), block_dim(4)); }, cls,
                     "enqueue_function");
    expect_use_error([&] { (void)a.execution_time([](const DeviceContext &) {}, 1); }, cls, "execution_time");

    // The object it was moved to works; the moved-from one can be assigned and destroyed.
    b.enqueue_memset(buf, 1);
    b.enqueue_function(f, buf, 4, grid_dim(1), block_dim(4));
    b.enqueue_copy(host, buf);
    b.synchronize();
    EXPECT_EQ(host[3], 2);
    a = DeviceContext(0, GetParam());
    EXPECT_EQ(a.api(), GetParam());
    DeviceContext c = std::move(a);
    a = std::move(c);
    a.synchronize();
}

TEST_P(MovedFromTest, EveryUseOfAMovedFromDeviceStream) {
    DeviceStream s = ctx().create_stream();
    DeviceStream t = std::move(s);
    auto buf = ctx().enqueue_create_buffer<int32_t>(4);
    auto host = ctx().enqueue_create_host_buffer<int32_t>(4);
    DeviceEvent ev = ctx().create_event();
    AddOne f = ctx().compile_function(add_one);
    const char *cls = "DeviceStream";
    expect_use_error([&] { s.synchronize(); }, cls, "synchronize");
    expect_use_error([&] { (void)s.is_done(); }, cls, "is_done");
    expect_use_error([&] { s.enqueue_wait_for(ev); }, cls, "enqueue_wait_for");
    expect_use_error([&] { s.record_event(ev); }, cls, "record_event");
    expect_use_error([&] { ev.record(s); }, cls, "record_event");
    expect_use_error([&] { (void)s.create_event(); }, cls, "create_event");
    expect_use_error([&] { (void)s.priority(); }, cls, "priority");
    expect_use_error([&] { (void)s.context(); }, cls, "context");
    expect_use_error([&] { s.enqueue_function(f, buf, 4, grid_dim(1), block_dim(4)); }, cls, "enqueue_function");
    expect_use_error([&] { s.enqueue_function(add_one, buf, 4, grid_dim(1), block_dim(4)); }, cls,
                     "enqueue_function");
    expect_use_error([&] { s.enqueue_copy(buf, host); }, cls, "enqueue_copy");
    expect_use_error([&] { s.enqueue_copy_2d(Copy2D{}); }, cls, "enqueue_copy_2d");
    expect_use_error([&] { s.enqueue_copy_3d(Copy3D{}); }, cls, "enqueue_copy_3d");
    expect_use_error([&] { s.enqueue_memset(buf, 3); }, cls, "enqueue_memset");
    expect_use_error([&] { s.begin_capture(); }, cls, "begin_capture");
    expect_use_error([&] { (void)s.end_capture(); }, cls, "end_capture");
    expect_use_error([&] { (void)s.is_capturing(); }, cls, "is_capturing");
    expect_use_error([&] { (void)(s == t); }, cls, "operator==");
    // As an argument.
    expect_use_error([&] { ctx().memset_d8_async(buf, 1, 4, s); }, cls, "memset_d8_async");
    auto m = ctx().create_managed_buffer<int32_t>(4);
    expect_use_error([&] { m.attach(MemAttach::single, s); }, cls, "ManagedBuffer::attach");
    DeviceGraph g = ctx().capture([&](DeviceStream &cs) { cs.enqueue_memset(buf, 5); });
    expect_use_error([&] { g.instantiate().launch(s); }, cls, "DeviceGraphExec::launch");

    t.enqueue_memset(buf, 9);
    t.enqueue_copy(host, buf);
    t.synchronize();
    EXPECT_EQ(host[0], 9);
    s = ctx().stream();
    s.synchronize();
}

TEST_P(MovedFromTest, EveryUseOfAnEmptyDeviceFunction) {
    auto buf = ctx().enqueue_create_buffer<int32_t>(4);
    AddOne made_from_nothing;
    AddOne from_null(nullptr);
    AddOne compiled = ctx().compile_function(add_one);
    AddOne moved_to = std::move(compiled);
    EXPECT_FALSE(made_from_nothing);
    EXPECT_TRUE(moved_to);
    for (AddOne *f : {&made_from_nothing, &from_null, &compiled}) {
        const char *cls = "DeviceFunction";
        expect_use_error([&] { (void)f->name(); }, cls, "name", true);
        expect_use_error([&] { (void)f->assembly(); }, cls, "assembly", true);
        expect_use_error([&] { (void)f->compile_seconds(); }, cls, "compile_seconds", true);
        expect_use_error([&] { (void)f->load_seconds(); }, cls, "load_seconds", true);
        expect_use_error([&] { (void)f->report(); }, cls, "report", true);
        expect_use_error([&] { (void)f->get_global("c"); }, cls, "get_global", true);
        expect_use_error([&] { (void)f->get_attribute(FunctionAttribute::num_regs); }, cls, "get_attribute", true);
        expect_use_error([&] { (void)f->num_regs(); }, cls, "get_attribute", true);
        expect_use_error([&] { f->set_attribute(FunctionAttribute::preferred_shared_memory_carveout, 50); }, cls,
                         "set_attribute", true);
        expect_use_error([&] { f->set_cache_config(CacheConfig::prefer_l1); }, cls, "set_cache_config", true);
        expect_use_error([&] { (void)f->max_active_blocks_per_multiprocessor(32); }, cls,
                         "max_active_blocks_per_multiprocessor", true);
        expect_use_error([&] { (void)f->suggested_block_size(); }, cls, "suggested_block_size", true);
        expect_use_error([&] { ctx().enqueue_function(*f, buf, 4, grid_dim(1), block_dim(4)); }, cls,
                         "enqueue_function", true);
        expect_use_error([&] { ctx().stream().enqueue_function(*f, buf, 4, grid_dim(1), block_dim(4)); }, cls,
                         "enqueue_function", true);
    }
    DeviceGraph g = ctx().capture([&](DeviceStream &s) { s.enqueue_function(moved_to, buf, 4, grid_dim(1), block_dim(4)); });
    DeviceGraphExec exec = g.instantiate();
    expect_use_error([&] { exec.update_kernel_arguments(0, made_from_nothing, buf, 4); }, "DeviceFunction",
                     "update_kernel_arguments", true);

    made_from_nothing = moved_to;
    ctx().enqueue_memset(buf, 0);
    ctx().enqueue_function(made_from_nothing, buf, 4, grid_dim(1), block_dim(4));
    std::vector<int32_t> host(4);
    ctx().enqueue_copy(host.data(), buf);
    ctx().synchronize();
    EXPECT_EQ(host[2], 1);
}

TEST_P(MovedFromTest, EmptyEventsGraphsAndModules) {
    DeviceEvent made = ctx().create_event();
    DeviceEvent moved = std::move(made);
    DeviceEvent none;
    for (DeviceEvent *e : {&made, &none}) {
        DeviceEvent &ev = *e;
        expect_use_error([&] { ev.record(); }, "DeviceEvent", "record", true);
        expect_use_error([&] { ev.synchronize(); }, "DeviceEvent", "synchronize", true);
        expect_use_error([&] { (void)ev.query(); }, "DeviceEvent", "query", true);
        expect_use_error([&] { (void)ev.time_since(moved); }, "DeviceEvent", "time_since", true);
        expect_use_error([&] { (void)moved.time_since(ev); }, "DeviceEvent", "time_since", true);
        expect_use_error([&] { ctx().record_event(ev); }, "DeviceEvent", "record_event", true);
        expect_use_error([&] { ctx().enqueue_wait_for(ev); }, "DeviceEvent", "enqueue_wait_for", true);
    }
    moved.record();
    moved.synchronize();

    DeviceGraph g = ctx().capture([](DeviceStream &) {});
    DeviceGraph g2 = std::move(g);
    expect_use_error([&] { (void)g.num_nodes(); }, "DeviceGraph", "num_nodes", true);
    expect_use_error([&] { (void)g.kernel_nodes(); }, "DeviceGraph", "kernel_nodes", true);
    expect_use_error([&] { (void)g.instantiate(); }, "DeviceGraph", "instantiate", true);
    expect_use_error([&] { (void)g.context(); }, "DeviceGraph", "context", true);
    DeviceGraphExec x = g2.instantiate();
    DeviceGraphExec x2 = std::move(x);
    expect_use_error([&] { x.launch(); }, "DeviceGraphExec", "launch", true);
    expect_use_error([&] { x.launch(ctx().stream()); }, "DeviceGraphExec", "launch", true);
    expect_use_error([&] { (void)x.num_nodes(); }, "DeviceGraphExec", "num_nodes", true);
    expect_use_error([&] { (void)x.kernel_nodes(); }, "DeviceGraphExec", "kernel_nodes", true);
    expect_use_error([&] { x.update_kernel_arguments(0, add_one, DeviceBuffer<int32_t>(), 4); }, "DeviceGraphExec",
                     "update_kernel_arguments", true);
    x2.launch();
    ctx().synchronize();

    DeviceModule no_module;
    expect_use_error([&] { (void)no_module.name(); }, "DeviceModule", "name", true);
    expect_use_error([&] { (void)no_module.function_names(); }, "DeviceModule", "function_names", true);
    expect_use_error([&] { (void)no_module.global_names(); }, "DeviceModule", "global_names", true);
    expect_use_error([&] { (void)no_module.context(); }, "DeviceModule", "context", true);
    expect_use_error([&] { (void)no_module.get_function<Ptr<int32_t>, Int>("k"); }, "DeviceModule", "get_function", true);
    expect_use_error([&] { (void)no_module.get_global<float>("g"); }, "DeviceModule", "get_global", true);
}

TEST_P(MovedFromTest, MovedFromBuffersAndViewsAreEmpty) {
    auto buf = ctx().enqueue_create_buffer<int32_t>(4);
    auto moved = std::move(buf);
    EXPECT_FALSE(buf);
    EXPECT_EQ(buf.size(), 0u);
    EXPECT_THROW((void)buf.create_sub_buffer(0, 1), LogicError);
    EXPECT_THROW((void)buf.map_to_host(), LogicError);
    EXPECT_THROW(buf.enqueue_fill(1), LogicError);
    EXPECT_THROW(ctx().enqueue_memset(buf, 1), LogicError);
    EXPECT_THROW(ctx().enqueue_copy(moved, buf), LogicError);
    auto host = ctx().enqueue_create_host_buffer<int32_t>(4);
    auto host2 = std::move(host);
    EXPECT_FALSE(host);
    EXPECT_EQ(host.size(), 0u);
    EXPECT_EQ(host.begin(), host.end()); // iterating it does nothing
    for (int32_t &x : host) x = 1;
    EXPECT_EQ(host2.size(), 4u);
    auto img = ctx().create_pitched_buffer<float>(8, 2);
    auto img2 = std::move(img);
    EXPECT_FALSE(img);
    EXPECT_EQ(img.bytes(), 0u);
    EXPECT_EQ(img2.height(), 2u);
    buf = std::move(moved); // assigning to a moved-from buffer
    EXPECT_EQ(buf.size(), 4u);
    ctx().enqueue_memset(buf, 1);
    int32_t mine[4] = {};
    RegisteredHostMemory r = ctx().register_host_memory(mine, sizeof mine);
    RegisteredHostMemory r2 = std::move(r);
    EXPECT_FALSE(r);
    r.unregister(); // nothing to do
    EXPECT_TRUE(r2);
}

INSTANTIATE_TEST_SUITE_P(Apis, MovedFromTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
