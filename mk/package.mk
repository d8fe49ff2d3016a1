# mk/package.mk -- what ships: the version, make install, the Debian package, the container
# image (docs/operations.md). Included by the Makefile.
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   binaries, man pages, config, systemd unit
#   make deb        build/bascule_<version>_<arch>.deb (dpkg-buildpackage on a copy of the tree)
#   make image      the container image from that package (Containerfile, podman)

VERSION    := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV    ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/bascule
# The FHS places of a system install (PREFIX=/usr); a /usr/local install keeps to its prefix.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR    ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)

.PHONY: install deb image FORCE

# The version and revision the binary reports (core/build_info.c, bascule_build_info): the
# stamp is rewritten only when they change, so a commit rebuilds that one object only.
$(BUILD)/gen/build_info.stamp: FORCE
	@mkdir -p $(dir $@)
	@printf '%s %s\n' '$(VERSION)' '$(GIT_REV)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/obj/src/core/build_info.o: $(BUILD)/gen/build_info.stamp
$(BUILD)/obj/src/core/build_info.o: OBJ_DEFS = -DBASCULE_VERSION='"$(VERSION)"' \
                                               -DBASCULE_REVISION='"$(GIT_REV)"'

# Configuration files already present are kept (an operator's edits survive a reinstall).
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(SYSCONFDIR)/bascule $(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(UNITDIR) \
	  $(DESTDIR)$(DATADIR)/grafana $(DESTDIR)$(DATADIR)/prometheus
	install -m 0755 $(BUILD)/bascule $(BUILD)/bascule-sim $(DESTDIR)$(BINDIR)/
	install -m 0644 docs/man/bascule.1 docs/man/bascule-sim.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/man/bascule.yaml.5 $(DESTDIR)$(MANDIR)/man5/bascule.yaml.5
	test -e $(DESTDIR)$(SYSCONFDIR)/bascule/bascule.yaml || \
	  install -m 0644 deploy/bascule.yaml $(DESTDIR)$(SYSCONFDIR)/bascule/bascule.yaml
	test -e $(DESTDIR)$(SYSCONFDIR)/default/bascule || \
	  install -m 0600 deploy/default/bascule $(DESTDIR)$(SYSCONFDIR)/default/bascule
	sed -e 's|/usr/bin/|$(BINDIR)/|g' -e 's|/etc/|$(SYSCONFDIR)/|g' \
	  deploy/systemd/bascule.service > $(DESTDIR)$(UNITDIR)/bascule.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/bascule.service
	install -m 0644 deploy/grafana/bascule.json $(DESTDIR)$(DATADIR)/grafana/
	install -m 0644 deploy/prometheus/bascule-rules.yml $(DESTDIR)$(DATADIR)/prometheus/

deb:
	@scripts/make-deb

# Uses the package make deb left in build/ (made first when there is none).
image:
	@scripts/make-image
