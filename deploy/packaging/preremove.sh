#!/bin/sh
# Before removal (not upgrade): stop the broker. Its data in /var/lib/queen
# is kept; remove it by hand if it is no longer wanted.
case "$1" in
  remove|0) ;;          # deb: remove; rpm: 0 packages left
  *) exit 0 ;;          # upgrade
esac
if [ -d /run/systemd/system ]; then
  systemctl stop queen.service >/dev/null 2>&1 || true
  systemctl disable queen.service >/dev/null 2>&1 || true
fi
exit 0
