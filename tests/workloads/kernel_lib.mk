# kernel_lib.mk — what tests/workloads/kernel_lib.c needs before it compiles:
# Linux's lib/sort.c and lib/rbtree.c and the headers they include, taken at
# build time from Debian's linux-source-6.1 package (ci/packages.txt; nothing
# of it is kept in this repository), and kernel_lib_shim.h under each name
# of the kernel's own headers they include beyond those (types, export,
# compiler, container_of, stddef, rcupdate). guest-kernel/image.mk includes
# this for USER_SRC=.../kernel_lib.c; everything goes to $(OUT)/include.
KLIB_TAR     ?= /usr/src/linux-source-6.1.tar.xz
KLIB_TOP     := linux-source-6.1
KLIB_INC     := $(OUT)/include
KLIB_SOURCES := lib/sort.c lib/rbtree.c include/linux/sort.h include/linux/rbtree.h \
                include/linux/rbtree_types.h include/linux/rbtree_augmented.h
KLIB_SHIMS   := types export compiler container_of stddef rcupdate
KLIB_HERE    := $(dir $(USER_SRC))

$(KLIB_INC)/klib/.unpacked: $(KLIB_HERE)kernel_lib_shim.h
	@test -f $(KLIB_TAR) || { echo "$(KLIB_TAR) is missing: apt-get install" \
		"linux-source-6.1 (ci/packages.txt)" >&2; exit 1; }
	@rm -rf $(KLIB_INC)/klib $(KLIB_INC)/linux $(KLIB_INC)/klib.tmp
	@mkdir -p $(KLIB_INC)/klib.tmp $(KLIB_INC)/linux
	tar -xJf $(KLIB_TAR) -C $(KLIB_INC)/klib.tmp $(addprefix $(KLIB_TOP)/,$(KLIB_SOURCES))
	@cp $(KLIB_INC)/klib.tmp/$(KLIB_TOP)/include/linux/*.h $(KLIB_INC)/linux/
	@for h in $(KLIB_SHIMS); do echo '#include "kernel_lib_shim.h"' \
		> $(KLIB_INC)/linux/$$h.h; done
	@cp $(KLIB_HERE)kernel_lib_shim.h $(KLIB_INC)/
	@mv $(KLIB_INC)/klib.tmp/$(KLIB_TOP)/lib $(KLIB_INC)/klib
	@rm -rf $(KLIB_INC)/klib.tmp
	@touch $@

$(USER_OBJ): $(KLIB_INC)/klib/.unpacked
