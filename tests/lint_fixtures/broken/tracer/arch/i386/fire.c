/* The fire path; only this arch has one. */
