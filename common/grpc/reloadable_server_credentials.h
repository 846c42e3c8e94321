// gRPC server credentials whose certificate follows a tls::CertificateStore:
// gRPC asks for the server's certificate config at every new handshake
// (grpc_ssl_server_credentials_create_options_using_config_fetcher, the
// stable core API of gRPC 1.51), and gets the store's new material once
// after each reload. The listener and the connections already open are
// untouched; a reload that failed changed nothing in the store, so the old
// certificate stays.
//
// With a client CA in the material, clients must present a certificate
// that chains to it (REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
// without, none is asked for.
#pragma once

#include <memory>

#include "common/tls/certificate_store.h"
#include "grpcpp/security/server_credentials.h"

namespace tandem::grpc_util {

// credentials for ServerBuilder::AddListeningPort. Whether clients must
// present a certificate is decided here, by whether `store` holds a client
// CA now (its reloads re-read the same files). The credentials may be
// dropped once the server is built; `store` must live as long as the
// server should follow its reloads (after that, the last certificate stays).
std::shared_ptr<grpc::ServerCredentials> reloadableServerCredentials(tls::CertificateStorePtr store);

}  // namespace tandem::grpc_util
