/* libbare.so: found only through libloader's RUNPATH (or a decoy directory in LD_LIBRARY_PATH). */
int bare_value(void) { return BARE_VALUE; }
