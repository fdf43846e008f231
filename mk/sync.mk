# sessiondag sync (docs/sync.md): its tests push to real servers on 127.0.0.1 — git daemon and
# git http-backend (git) and sshd (Debian's openssh-server) — started by the tests themselves.
SYNC_SSHD := /usr/sbin/sshd

$(SYNC_SSHD):
	command -v git >/dev/null || (apt-get update -q && apt-get install -y -q git)
	apt-get update -q && apt-get install -y -q openssh-server openssh-client

.PHONY: sync-install
sync-install: $(SYNC_SSHD)
TEST_DEPS += $(SYNC_SSHD)
install: sync-install
