#!/usr/bin/env bash
# Makes a throwaway CA and a server certificate it signs for 127.0.0.1 (and
# a second CA that signs nothing of it), for the kubernetes connector's
# test API server. Run by the test into a fresh temp directory:
#   make_test_ca.sh DIR   ->  DIR/{ca.pem,server.pem,server.key,other_ca.pem}
set -euo pipefail
cd "$1"
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >ext.cnf
for who in ca other_ca; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=tandem planner test $who" -keyout "$who.key" -out "$who.pem" 2>/dev/null
done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver test" \
  -keyout server.key -out server.csr 2>/dev/null
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile ext.cnf -out server.pem 2>/dev/null
rm -f ca.key other_ca.key server.csr ca.srl ext.cnf
