#!/usr/bin/env bash
# Creates verifiers/python/.venv with the pinned requirements (PyPI only). Idempotent: when the venv
# exists and was built from the same requirements.txt, it does nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[python-verifier] venv up to date ($venv)"
  exit 0
fi
python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { echo "[python-verifier] $python not found" >&2; exit 1; }
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  # Debian's python3 ships venv and ensurepip separately.
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  else
    echo "[python-verifier] $python has no venv/ensurepip module (install python3-venv)" >&2; exit 1
  fi
fi
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"
echo "$want" > "$stamp"
echo "[python-verifier] venv ready ($venv: $("$venv/bin/python" -c 'import confluent_kafka, fastavro; print("confluent-kafka", confluent_kafka.__version__, "librdkafka", confluent_kafka.libversion()[0], "fastavro", fastavro.__version__)'))"
