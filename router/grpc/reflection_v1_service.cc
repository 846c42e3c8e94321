#include "router/grpc/reflection_v1_service.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace tandem::router {
namespace {

namespace v1 = grpc::reflection::v1;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// the names of the server's services, known once the server is built (the
// builder tells its plugins after it started: until then, none).
class ServiceNames {
 public:
  void set(std::vector<std::string> names) {
    std::lock_guard lock(mu_);
    names_ = std::move(names);
  }
  std::vector<std::string> get() const {
    std::lock_guard lock(mu_);
    return names_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
};

// one ServerReflectionInfo stream: each request answered in turn (read,
// write, read: never both at once), as gRPC's ProtoServerReflection
// answers it, with the same error codes and messages.
class ReflectionStream final
    : public grpc::ServerBidiReactor<v1::ServerReflectionRequest, v1::ServerReflectionResponse> {
 public:
  explicit ReflectionStream(const ServiceNames& services) : services_(services) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client closed its side (or left): the stream is done
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    answer();
    response_.set_valid_host(request_.host());
    *response_.mutable_original_request() = request_;
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the reflection stream broke"));
      return;
    }
    request_.Clear();
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  void answer() {
    const DescriptorPool* pool = DescriptorPool::generated_pool();
    switch (request_.message_request_case()) {
      case v1::ServerReflectionRequest::kFileByFilename:
        return answerFile(pool->FindFileByName(request_.file_by_filename()), "File not found.");
      case v1::ServerReflectionRequest::kFileContainingSymbol:
        return answerFile(pool->FindFileContainingSymbol(request_.file_containing_symbol()),
                          "Symbol not found.");
      case v1::ServerReflectionRequest::kFileContainingExtension: {
        const v1::ExtensionRequest& ext = request_.file_containing_extension();
        const auto* type = pool->FindMessageTypeByName(ext.containing_type());
        if (type == nullptr) return error(grpc::StatusCode::NOT_FOUND, "Type not found.");
        const auto* field = pool->FindExtensionByNumber(type, ext.extension_number());
        if (field == nullptr) return error(grpc::StatusCode::NOT_FOUND, "Extension not found.");
        return answerFile(field->file(), "");
      }
      case v1::ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const auto* type = pool->FindMessageTypeByName(request_.all_extension_numbers_of_type());
        if (type == nullptr) return error(grpc::StatusCode::NOT_FOUND, "Type not found.");
        std::vector<const google::protobuf::FieldDescriptor*> extensions;
        pool->FindAllExtensions(type, &extensions);
        auto* numbers = response_.mutable_all_extension_numbers_response();
        numbers->set_base_type_name(type->full_name());
        for (const auto* e : extensions) numbers->add_extension_number(e->number());
        return;
      }
      case v1::ServerReflectionRequest::kListServices: {
        auto* list = response_.mutable_list_services_response();
        for (const std::string& name : services_.get()) list->add_service()->set_name(name);
        return;
      }
      case v1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
        break;
    }
    error(grpc::StatusCode::UNIMPLEMENTED, "The provided request is not supported.");
  }

  // `file` and the files it imports, each once (null: NOT_FOUND saying `missing`).
  void answerFile(const FileDescriptor* file, const char* missing) {
    if (file == nullptr) return error(grpc::StatusCode::NOT_FOUND, missing);
    auto* files = response_.mutable_file_descriptor_response();
    std::unordered_set<std::string> seen;
    std::vector<const FileDescriptor*> pending{file};
    while (!pending.empty()) {
      const FileDescriptor* f = pending.back();
      pending.pop_back();
      if (!seen.insert(f->name()).second) continue;
      google::protobuf::FileDescriptorProto proto;
      f->CopyTo(&proto);
      proto.SerializeToString(files->add_file_descriptor_proto());
      for (int i = f->dependency_count() - 1; i >= 0; --i) pending.push_back(f->dependency(i));
    }
  }

  void error(grpc::StatusCode code, const char* message) {
    auto* e = response_.mutable_error_response();
    e->set_error_code(static_cast<int32_t>(code));
    e->set_error_message(message);
  }

  const ServiceNames& services_;
  v1::ServerReflectionRequest request_;
  v1::ServerReflectionResponse response_;
};

class ReflectionV1Service final : public v1::ServerReflection::CallbackService {
 public:
  // v1::ServerReflection::CallbackService
  grpc::ServerBidiReactor<v1::ServerReflectionRequest, v1::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* /*context*/) override {
    return new ReflectionStream(names_);
  }

  ServiceNames& names() { return names_; }

 private:
  ServiceNames names_;
};

// how a service joins a server as it is built and learns the server's
// services (gRPC's own reflection plugin works the same way).
class ReflectionV1Plugin final : public grpc::ServerBuilderPlugin {
 public:
  // grpc::ServerBuilderPlugin
  std::string name() override { return "tandem_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* si) override { si->RegisterService(service_); }
  void Finish(grpc::ServerInitializer* si) override { service_->names().set(*si->GetServiceList()); }
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}

 private:
  std::shared_ptr<ReflectionV1Service> service_ = std::make_shared<ReflectionV1Service>();
};

class ReflectionV1Option final : public grpc::ServerBuilderOption {
 public:
  // grpc::ServerBuilderOption
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ReflectionV1Plugin>());
  }
};

}  // namespace

void addReflectionV1(grpc::ServerBuilder& builder) {
  builder.SetOption(std::make_unique<ReflectionV1Option>());
}

}  // namespace tandem::router
