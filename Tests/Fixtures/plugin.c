/* libplugin.so: dlopen'ed after the rebinding; its calls to libtarget must be hooked too. */
int target_add(int a, int b);
int plugin_add(int a, int b) { return target_add(a, b); }
