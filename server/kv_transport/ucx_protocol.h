// The UCX transport's wire: D's endpoint string and the active messages P
// and D exchange over UCP (ucx_kv_sender.h, ucx_kv_receiver.h). Block bytes
// travel by RMA (ucp_put_nbx into D's registered KV storage at the offsets
// D chose) or, where D registered nothing, as the data of kData messages
// that D receives straight into the destination block. Every message is
// peer input: parsed with bounds, lengths capped.
//
//   endpoint  "ucx://<hex worker address>?rkey=<hex>&base=<hex>&bytes=<n>&boot_id=<id>&pid=<n>"
//             (rkey/base/bytes absent: no RMA) + "&token=<hex>" per transfer
//             (KvReceiver::transferEndpoint), handed to P only through the
//             authenticated Prefill RPC.
//   P → D  kOpen     {u64 stream, u64 block_bytes, transfer_id, token,
//                     P's worker address, P's boot id, u32 P's pid}
//   D → P  kOpened   {u64 stream, i32 code, message, u64 handle, u32 n,
//                     u64 offset[n]}: block index i lands `offset[i]` bytes
//                     into D's registered storage
//   P → D  kBlocks   {u64 handle, n × {i32 index, u64 hash, u64 checksum}}:
//                     these blocks' puts completed remotely, please verify
//   P → D  kData     header {u64 handle, i32 index, u64 hash, u64 checksum},
//                     data: the block's bytes (no RMA)
//   P → D  kFinish   {u64 handle, token}
//   D → P  kResult   {u64 stream, i32 code, i32 failed_block, message}
//   P → D  kAbort    {u64 handle}: the sender gave up (its stream was
//                     destroyed unfinished)
//
// `handle` is a random 64-bit number D gives the claimed transfer; P names
// the transfer by it afterwards. The per-transfer token D generated at
// expect() must match in kOpen and again in kFinish, so only a peer that
// was handed the endpoint through the authenticated RPC can claim or
// complete a transfer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::kv_transport::ucx {

// active message ids.
enum MessageId : unsigned {
  kOpen = 1,
  kOpened = 2,
  kBlocks = 3,
  kData = 4,
  kFinish = 5,
  kResult = 6,
  kAbort = 7,
};

// bounds on what a peer may send.
inline constexpr size_t kMaxWorkerAddressBytes = 8192;
inline constexpr size_t kMaxRkeyBytes = 4096;
inline constexpr size_t kMaxTransferIdBytes = 512;
inline constexpr size_t kMaxBootIdBytes = 128;
inline constexpr size_t kMaxMessageBytes = 4096;

// D's endpoint as P parses it.
struct UcxEndpoint {
  std::string worker_address;  // binary, as ucp_worker_get_address gave it
  std::string rkey;            // binary packed rkey; empty = no RMA
  uint64_t base = 0;           // D's storage address in D's process
  uint64_t bytes = 0;          // its size
  std::string boot_id;
  uint32_t pid = 0;   // D's process (a same-host sender watches it exit)
  std::string token;  // binary, kTransferTokenBytes; empty when not per transfer
};

// "ucx://…" without the token.
std::string formatUcxEndpoint(const UcxEndpoint& e);
// the token parameter appended to a formatted endpoint.
std::string tokenParam(std::string_view token);
// parses what follows "ucx://". InvalidArgument for bad hex, unknown or
// repeated parameters, oversized fields, an rkey without base and bytes.
absl::StatusOr<UcxEndpoint> parseUcxEndpoint(std::string_view rest);

std::string hexEncode(std::string_view bytes);
std::optional<std::string> hexDecode(std::string_view hex, size_t max_bytes);

// where block `offset` of `block_bytes` lies wholly within [0, bytes):
// checked without overflow.
bool rangeInside(uint64_t offset, uint64_t block_bytes, uint64_t bytes);

struct OpenMessage {
  uint64_t stream = 0;
  uint64_t block_bytes = 0;
  std::string transfer_id;
  std::string token;
  std::string worker_address;
  std::string boot_id;
  uint32_t pid = 0;
};
std::string encode(const OpenMessage& m);
std::optional<OpenMessage> decodeOpen(std::string_view payload);

struct OpenedMessage {
  uint64_t stream = 0;
  int32_t code = 0;
  std::string message;
  uint64_t handle = 0;
  std::vector<uint64_t> offsets;
};
std::string encode(const OpenedMessage& m);
// `max_blocks` caps the offset list (no more blocks than D's storage holds).
std::optional<OpenedMessage> decodeOpened(std::string_view payload, size_t max_blocks);

struct BlockNote {
  int32_t index = 0;
  uint64_t hash = 0;
  uint64_t checksum = 0;
};
struct BlocksMessage {
  uint64_t handle = 0;
  std::vector<BlockNote> blocks;
};
std::string encode(const BlocksMessage& m);
std::optional<BlocksMessage> decodeBlocks(std::string_view payload);

// kData's header: fixed size, sent as the AM header.
struct DataHeader {
  uint64_t handle = 0;
  BlockNote block;
};
std::string encode(const DataHeader& m);
std::optional<DataHeader> decodeDataHeader(std::string_view header);

struct FinishMessage {
  uint64_t handle = 0;
  std::string token;
};
std::string encode(const FinishMessage& m);
std::optional<FinishMessage> decodeFinish(std::string_view payload);

// kAbort's payload is the handle alone.
std::string encodeAbort(uint64_t handle);
std::optional<uint64_t> decodeAbort(std::string_view payload);

struct ResultMessage {
  uint64_t stream = 0;
  int32_t code = 0;
  int32_t failed_block = -1;
  std::string message;
};
std::string encode(const ResultMessage& m);
std::optional<ResultMessage> decodeResult(std::string_view payload);

}  // namespace tandem::kv_transport::ucx
