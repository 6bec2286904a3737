#!/usr/bin/env bash
# Create a private CA and TLS certificates for a Dask cluster: scheduler, worker, client.
#
# Usage: make-certs.sh DIR [--hosts NAME,IP,...] [--days N] [--force]
#
#   DIR        output directory (created with mode 0700)
#   --hosts    extra host names / IP addresses of the scheduler and workers, written into the
#              certificates' subjectAltName (localhost and 127.0.0.1 are always there). Dask
#              checks certificates against the CA, not host names, so this is informational.
#   --days     validity in days (default 365)
#   --force    overwrite existing files (a new CA: every old certificate stops working)
#
# Writes (keys mode 0600, certificates 0644):
#   ca.pem            the CA certificate: every scheduler, worker and client needs it
#   ca-key.pem        the CA key: keep it OFF the cluster (it signs new certificates)
#   scheduler.pem     scheduler-key.pem
#   worker.pem        worker-key.pem
#   client.pem        client-key.pem     (what `parcv run --tls-*` uses)
# Every leaf certificate is valid for both TLS server and client use: a scheduler and a
# worker are both, and parcv uses the client certificate for clusters it starts itself.
set -euo pipefail

usage() { sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

DIR="" HOSTS="" DAYS=365 FORCE=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --hosts) HOSTS=${2:?--hosts needs a value}; shift 2 ;;
    --days) DAYS=${2:?--days needs a value}; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h | --help) usage ;;
    -*) echo "make-certs.sh: unknown option '$1'" >&2; usage ;;
    *) [[ -z $DIR ]] || usage; DIR=$1; shift ;;
    esac
done
[[ -n $DIR ]] || usage
[[ $DAYS =~ ^[1-9][0-9]*$ ]] || { echo "make-certs.sh: --days must be a positive integer; got '$DAYS'" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-certs.sh: openssl is not installed" >&2; exit 1; }

umask 077 # keys are the owner's only from the moment they exist
mkdir -p "$DIR"
chmod 0700 "$DIR"
if [[ $FORCE -eq 0 && -e $DIR/ca.pem ]]; then
    echo "make-certs.sh: $DIR/ca.pem exists; pass --force to replace the CA and every certificate" >&2
    exit 1
fi

san="DNS:localhost,IP:127.0.0.1"
IFS=',' read -r -a extra <<<"$HOSTS"
for host in "${extra[@]}"; do
    [[ -z $host ]] && continue
    if [[ $host =~ ^[0-9.]+$ || $host == *:* ]]; then san+=",IP:$host"; else san+=",DNS:$host"; fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# EC P-256 keys: small and fast, supported by every OpenSSL that Python's ssl uses.
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

newkey "$DIR/ca-key.pem"
openssl req -new -x509 -key "$DIR/ca-key.pem" -out "$DIR/ca.pem" -days "$DAYS" \
    -subj "/CN=parcv dask CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

cat >"$tmp/leaf.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san
EOF

for role in scheduler worker client; do
    newkey "$DIR/$role-key.pem"
    openssl req -new -key "$DIR/$role-key.pem" -subj "/CN=parcv dask $role" \
        -out "$tmp/$role.csr" 2>/dev/null
    openssl x509 -req -in "$tmp/$role.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca-key.pem" \
        -CAcreateserial -CAserial "$tmp/ca.srl" -days "$DAYS" \
        -extfile "$tmp/leaf.ext" -out "$DIR/$role.pem" 2>/dev/null
    openssl verify -CAfile "$DIR/ca.pem" "$DIR/$role.pem" >/dev/null
done

chmod 0600 "$DIR"/*-key.pem
chmod 0644 "$DIR"/ca.pem "$DIR"/scheduler.pem "$DIR"/worker.pem "$DIR"/client.pem
echo "make-certs.sh: CA and scheduler/worker/client certificates in $DIR (valid $DAYS days)" >&2
