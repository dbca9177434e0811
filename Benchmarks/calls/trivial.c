/* The floor for a call through a GOT slot: a function in a shared library that does nothing but
 * return (scripts/bench-calls builds it as libtrivial.so). */
int trivial(int value) { return value; }
