/* libversioned.so: one name, two versions; programs bind to the default, VERS_2. */
int vfunc_old(void) { return 1; }
int vfunc_new(void) { return 2; }
__asm__(".symver vfunc_old, vfunc@VERS_1");
__asm__(".symver vfunc_new, vfunc@@VERS_2");
