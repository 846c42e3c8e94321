// Endpoints, automatic transport selection, and D's engine running on the
// shared region the shm transport exports.
#include "server/kv_transport/kv_transport_factory.h"

#include <future>

#include "gtest/gtest.h"
#include "kernels/host_buffer.h"
#include "server/engine/engine_assembly.h"
#include "tests/test_paths.h"

namespace tandem::kv_transport {
namespace {

TEST(EndpointTest, ParsesAndFormatsEndpointLists) {
  auto list = parseEndpoints("grpc://10.0.0.7:7001, shm://tandem-kv-1?boot_id=abc");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].kind, TransportKind::kGrpc);
  EXPECT_EQ((*list)[0].address, "10.0.0.7:7001");
  EXPECT_EQ((*list)[1].kind, TransportKind::kShm);
  EXPECT_EQ((*list)[1].address, "tandem-kv-1");
  EXPECT_EQ((*list)[1].boot_id, "abc");
  EXPECT_EQ(formatEndpoint((*list)[1]), "shm://tandem-kv-1?boot_id=abc");
  EXPECT_FALSE(parseEndpoints("tcp://x:1").ok());
  EXPECT_FALSE(parseEndpoints("").ok());
  EXPECT_FALSE(parseEndpoints("grpc://").ok());
}

TEST(ChooseEndpointTest, PrefersShmOnlyOnTheSameHost) {
  auto list = *parseEndpoints("grpc://h:1,shm://s?boot_id=here");
  EXPECT_EQ(chooseEndpoint(list, TransportChoice::kAuto, "here")->kind, TransportKind::kShm);
  EXPECT_EQ(chooseEndpoint(list, TransportChoice::kAuto, "elsewhere")->kind, TransportKind::kGrpc);
  EXPECT_EQ(chooseEndpoint(list, TransportChoice::kGrpc, "here")->kind, TransportKind::kGrpc);
  EXPECT_EQ(chooseEndpoint(list, TransportChoice::kShm, "elsewhere")->kind, TransportKind::kShm);
  auto shm_only = *parseEndpoints("shm://s?boot_id=here");
  EXPECT_EQ(chooseEndpoint(shm_only, TransportChoice::kAuto, "elsewhere").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(parseTransportChoice("rdma").status().code(), absl::StatusCode::kInvalidArgument);
}

// D serves both transports; P's auto sender takes shm here, and gRPC for an
// endpoint claiming another host.
TEST(AutoSelectionTest, AutoSenderUsesShmOnThisHostAndGrpcForAnother) {
  constexpr size_t kBlock = 4096;
  auto region = *ShmRegion::create(kBlock * 4);
  auto receiver = createKvReceiver({}, {region->data(), kBlock, 4}, region);
  ASSERT_TRUE(receiver.ok()) << receiver.status();
  const std::string endpoint = (*receiver)->endpoint();
  EXPECT_NE(endpoint.find("grpc://127.0.0.1:"), std::string::npos) << endpoint;
  EXPECT_NE(endpoint.find("shm://"), std::string::npos) << endpoint;
  KvSenderOptions options;
  options.block_bytes = kBlock;
  auto sender = *createKvSender(options, TransportChoice::kAuto);
  std::vector<char> src(kBlock, 'x');

  auto push = [&](const std::string& id, const std::string& to) {
    std::promise<TransferResult> done;
    ExpectedTransfer t{id, {2}, {77}};
    EXPECT_TRUE((*receiver)->expect(t, [&](const TransferResult& r) { done.set_value(r); }).ok());
    auto stream = sender->open({to, id});
    EXPECT_TRUE(stream.ok()) << stream.status();
    KvBlock b{0, 77, src.data()};
    EXPECT_TRUE((*stream)->send({&b, 1}).ok());
    EXPECT_TRUE((*stream)->finish().ok());
    return done.get_future().get();
  };
  TransferResult local = push("local", endpoint);
  EXPECT_TRUE(local.status.ok()) << local.status;
  EXPECT_EQ(local.transport, "shm");
  std::string remote_endpoint = endpoint;
  remote_endpoint.replace(remote_endpoint.find("boot_id=") + 8, std::string::npos, "other-host");
  TransferResult remote = push("remote", remote_endpoint);
  EXPECT_TRUE(remote.status.ok()) << remote.status;
  EXPECT_EQ(remote.transport, "grpc");
  EXPECT_EQ(static_cast<char*>(region->data())[2 * kBlock + 100], 'x');
}

// the engine hook: D's KV storage is the caller's region, so blocks the shm
// transport writes are the blocks the model runner reads.
TEST(SharedKvStorageTest, LocalEngineRunsOnTheGivenRegion) {
  ShmRegionPtr region;
  engine::EngineAssemblyOptions opts;
  opts.num_threads = 1;
  opts.max_num_seqs = 2;
  opts.max_model_len = 64;
  opts.kv_storage = [&](size_t bytes) -> absl::StatusOr<kernels::BufferPtr> {
    auto r = ShmRegion::create(bytes);
    if (!r.ok()) return r.status();
    region = *r;
    return kernels::HostBuffer::alias(region->data(), bytes);
  };
  auto local = engine::EngineAssembly::create(tandem::testing::storiesGguf(), opts);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ((*local)->runner().kvCache().data, region->data());
  EXPECT_EQ(region->bytes(), (*local)->runner().kvLayout().blockBytes() * (*local)->numBlocks());
}

}  // namespace
}  // namespace tandem::kv_transport
