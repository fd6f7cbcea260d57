/* Broken on purpose for the paths rule: this comment names
 * tracer/core/gone.c, and so does the line comment below. */
const char *where = "tracer/core/in_a_string.c";  // tracer/core/gone.c
