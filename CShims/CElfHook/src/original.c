/* What a call through a slot really reaches.
 *
 * A resolved slot holds the function itself, and that is the original to keep (dlsym cannot see
 * libraries loaded RTLD_LOCAL, the slot can). Two kinds of value are not functions to call:
 *  - a lazy slot not yet called points back into its own image's PLT; calling that runs the
 *    resolver, which would overwrite the hook (fishhook's "hook runs only once" bug);
 *  - in a non-PIE executable, other images' slots may point at the executable's canonical PLT
 *    entry, which jumps through the executable's own slot — the hook, so it would recurse.
 * For those the symbol is looked up the way the importing image would see it: dlvsym/dlsym on that
 * image's handle (its own scope, versions and IFUNC resolvers honoured), then in each loaded image. */
#include "engine_private.h"

#include <dlfcn.h>
#include <elf.h>

void *(*eh_real_dlopen)(const char *, int) = dlopen;
int (*eh_real_dlclose)(void *) = dlclose;

static bool is_canonical_plt(eh_registry *registry, uintptr_t value) {
  for (size_t i = 0; i < registry->count; i++)
    if (registry->images[i]->has_canonical_plt && eh_image_is_canonical_plt(registry->images[i], value)) return true;
  return false;
}

/* A slot value can be kept as the original unless it is a lazy stub or a canonical PLT entry. */
static bool is_callable(eh_registry *registry, const eh_image *image, const eh_slot *slot, uintptr_t value) {
  if (value == 0) return false;
  if (eh_image_contains(image, value)) {
    /* Inside the importing image: callable only when it is the symbol's own definition there. */
    const ElfW(Sym) *symbol = &image->symtab[slot->symbol_index];
    return symbol->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(symbol->st_info) != STT_GNU_IFUNC &&
           image->load_bias + symbol->st_value == value;
  }
  return !is_canonical_plt(registry, value);
}

static void *open_scope(const eh_image *image) {
  return eh_real_dlopen(image->is_main_program ? NULL : image->path, RTLD_LAZY | RTLD_NOLOAD);
}

void eh_scope_cache_release(eh_scope_cache *scopes) {
  if (scopes->handle) eh_real_dlclose(scopes->handle);
  *scopes = (eh_scope_cache){0};
}

/* `slot` belongs to `importer`; the look-up runs in the scope `handle` stands for. */
static void *lookup_in(void *handle, const eh_image *importer, const eh_slot *slot) {
  if (!handle) return NULL;
  const char *version = eh_slot_version(importer, slot);
  return version ? dlvsym(handle, slot->name, version) : dlsym(handle, slot->name);
}

/* dlsym returns definitions (IFUNCs already resolved), never lazy stubs; only a canonical PLT entry
 * of a non-PIE executable has to be refused. The importer's own scope comes from `scopes` (a lazily
 * bound library has several slots to look up); the other images', tried only when that fails, are
 * opened and closed each time. */
static void *look_up(eh_registry *registry, const eh_image *image, const eh_slot *slot, eh_scope_cache *scopes) {
  if (scopes->image != image) {
    eh_scope_cache_release(scopes);
    scopes->handle = open_scope(image);
    scopes->image = scopes->handle ? image : NULL;
  }
  void *found = lookup_in(scopes->handle, image, slot);
  if (found && !is_canonical_plt(registry, (uintptr_t)found)) return found;
  for (size_t i = 0; i < registry->count; i++) {
    const eh_image *candidate = registry->images[i];
    if (candidate->is_main_program || candidate->is_vdso || !candidate->parsed_ok) continue;
    void *handle = open_scope(candidate);
    found = lookup_in(handle, image, slot);
    if (handle) eh_real_dlclose(handle);
    if (found && eh_image_contains(candidate, (uintptr_t)found)) return found;
  }
  return NULL;
}

void *eh_resolve_original(eh_registry *registry, const eh_image *image, const eh_slot *slot, void *value,
                          eh_scope_cache *scopes) {
  if (is_callable(registry, image, slot, (uintptr_t)value)) return value;
  void *found = look_up(registry, image, slot, scopes);
  dlerror(); /* the host must not see our failed look-ups in its next dlerror() */
  if (!found) {
    const char *version = eh_slot_version(image, slot);
    elfhook_append_error("cannot resolve the original of '%s%s%s' for %s", slot->name, version ? "@" : "",
                         version ? version : "", image->path);
  }
  return found;
}

void *eh_resolve_canonical_plt(eh_registry *registry, uintptr_t address) {
  for (size_t i = 0; i < registry->count; i++) {
    const eh_image *image = registry->images[i];
    if (!image->has_canonical_plt || !eh_image_is_canonical_plt(image, address)) continue;
    for (uint32_t s = 1; s < image->symbol_count; s++) {
      const ElfW(Sym) *symbol = &image->symtab[s];
      if (symbol->st_shndx != SHN_UNDEF || image->load_bias + symbol->st_value != address ||
          symbol->st_name >= image->strsz)
        continue;
      eh_slot slot = {.symbol_index = s, .name = image->strtab + symbol->st_name};
      eh_scope_cache scopes = {0};
      void *found = look_up(registry, image, &slot, &scopes);
      eh_scope_cache_release(&scopes);
      dlerror();
      return found;
    }
  }
  return NULL;
}
