#!/bin/sh
# After install or upgrade: let systemd read the unit. The service is not
# started or enabled on its own; the administrator decides (docs/operating.md).
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
  # An upgrade restarts a running broker on the new binary.
  if systemctl is-active --quiet queen.service; then
    systemctl try-restart queen.service >/dev/null 2>&1 || true
  fi
fi
exit 0
