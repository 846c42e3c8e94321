#include "tests/server/worker/worker_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "proto/convert/finish_reason_proto.h"
#include "proto/convert/worker_enum_names.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "tests/test_paths.h"

namespace tandem::worker::testing {

WorkerOptions smallWorkerOptions(WorkerRole role, int block_size) {
  WorkerOptions o;
  o.role = role;
  o.model_path = tandem::testing::storiesGguf();
  o.host = "127.0.0.1";
  o.port = 0;
  o.metrics_port = 0;
  o.prefill_timeout = std::chrono::milliseconds(5000);
  o.engine.num_threads = 1;
  o.engine.block_size = block_size;
  o.engine.max_num_seqs = 8;
  o.engine.max_model_len = 256;
  o.drain_timeout = std::chrono::milliseconds(1000);
  return o;
}

GenerateResult generate(const std::string& address, const std::vector<int32_t>& prompt,
                        int max_tokens, const std::string& prefill_address,
                        const grpc_util::ClusterAuthPtr& auth) {
  auto stub = tandem::v1::Worker::NewStub(auth->channel(address));
  tandem::v1::WorkerGenerateRequest request;
  request.set_request_id("test");
  request.mutable_token_ids()->Assign(prompt.begin(), prompt.end());
  request.mutable_params()->set_temperature(0);
  request.mutable_params()->set_max_tokens(max_tokens);
  request.mutable_params()->set_ignore_eos(true);
  request.set_prefill_address(prefill_address);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub->Generate(&ctx, request);
  GenerateResult result;
  tandem::v1::WorkerGenerateResponse msg;
  bool first = true;
  while (reader->Read(&msg)) {
    if (first) {
      result.prefill = std::string(rpc::prefillKindName(msg.prefill()));
      result.num_prompt_tokens = msg.num_prompt_tokens();
      result.num_cached_tokens = msg.num_cached_tokens();
      first = false;
    }
    result.tokens.push_back(msg.token());
    if (msg.finish_reason() != tandem::v1::FINISH_REASON_NONE) {
      result.finish = std::string(generation::finishReasonName(rpc::fromProto(msg.finish_reason())));
    }
  }
  result.status = reader->Finish();
  return result;
}

std::pair<int, std::string> httpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return {0, ""};
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
  close(fd);
  if (response.rfind("HTTP/1.1 ", 0) != 0) return {0, ""};
  const int code = std::stoi(response.substr(9, 3));
  const size_t body = response.find("\r\n\r\n");
  return {code, body == std::string::npos ? "" : response.substr(body + 4)};
}

double metricValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return 0;
}

}  // namespace tandem::worker::testing
