#!/usr/bin/env bash
# Makes the throwaway certificates of the cluster mTLS tests
# (tests/common/grpc/cluster_auth_test.cc): a cluster CA, one certificate it
# signs for a cluster process (server and client use, names 127.0.0.1,
# ::1 and localhost), and a stranger's CA and certificate it does not sign.
# EC P-256 keys, valid 100 years. Test data only: the keys are public.
#   cd tests/data/cluster_tls && ./make_certs.sh
set -euo pipefail
days=36500
ext=$(mktemp)
trap 'rm -f "$ext" ./*.csr ./*.srl' EXIT
printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' >"$ext"
for who in ca stranger_ca; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=tandem test $who" -keyout "$who.key" -out "$who.pem" 2>/dev/null
done
make_cert() {  # name, signing CA
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=tandem test $1" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days "$days" \
    -extfile "$ext" -out "$1.pem" 2>/dev/null
}
make_cert node ca
make_cert stranger stranger_ca
rm -f ca.key stranger_ca.key
