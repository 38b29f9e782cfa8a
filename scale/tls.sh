#!/usr/bin/env bash
# Throwaway certificates for the servers the tests start over TLS (postgres.sh and
# redis.sh with `tls`): a CA, a server certificate it signed for 127.0.0.1 and
# localhost, and a second CA that signed nothing here (a "wrong CA" for the tests that
# must be refused).
#
#   bash scale/tls.sh DIR   # writes DIR/ca.pem, DIR/server.pem, DIR/server.key, DIR/other-ca.pem
#
# EC P-256 keys (fast to make), valid 30 days; nothing is installed in any trust store.
set -euo pipefail

NAME=tls.sh
# shellcheck source=scale/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=${1:-}
[[ -n $dir ]] || die "usage: tls.sh DIR"
command -v openssl >/dev/null || install_debian openssl
mkdir -p "$dir"
cd "$dir"

ca() { # $1 = file stem, $2 = subject
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
        -keyout "$1.key" -out "$1.pem" -subj "/CN=$2" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        2>/dev/null || die "openssl: cannot make the CA $2"
}

ca ca "snodo test CA"
ca other-ca "snodo other test CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null \
    || die "openssl: cannot make the server key"
printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
    'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
    -extfile server.ext -out server.pem 2>/dev/null || die "openssl: cannot sign the server certificate"
rm -f server.csr server.ext ca.srl ca.key other-ca.key
chmod 600 server.key
