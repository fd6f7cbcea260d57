# Broken on purpose for the paths rule: a make comment naming tracer/gone/
# (a directory); $(BUILD)/tracer/x.o is build output, not checked.
OBJS := $(BUILD)/tracer/x.o
