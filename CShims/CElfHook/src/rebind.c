/* Rebinding sets: apply to images (now and later), undo, and chaining.
 *
 * Each elfhook_handle is one call's set of rebindings. It remembers every slot it wrote and what the
 * slot held before (its "binding"), so it can be undone alone. Handles are kept oldest first; a
 * newer handle on the same slot has the older one's replacement as its binding's `previous`, which
 * is how the chain is mended when a handle in the middle is removed.
 *
 * Image memory is only read and written inside dl_iterate_phdr callbacks for that very image:
 * glibc holds its load lock there, so dlclose on another thread cannot unmap the image under us.
 * dlsym (which takes the other loader lock) is only ever called outside those callbacks. */
#include "engine_private.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef struct eh_binding {
  uintptr_t image_bias;
  const ElfW(Phdr) *image_phdr;
  void **slot;
  void *previous;
  uint32_t rebinding;
} eh_binding;

struct elfhook_handle {
  elfhook_handle *next; /* newer */
  struct rebinding *rebindings;
  uint32_t *hashes;
  void **originals; /* per rebinding: what `replaced` received, NULL until a slot was found */
  size_t count;
  char **only_images, **except_images;
  elfhook_image_filter filter;
  void *filter_context;
  unsigned flags;
  bool single_image;
  uintptr_t image_bias;
  eh_binding *bindings;
  size_t binding_count, binding_capacity;
};

eh_registry eh_loaded_images;
static elfhook_handle *oldest_handle;
elfhook_statistics eh_statistics;
static bool dlopen_hook_installed;

void *eh_hook_dlopen(const char *file, int mode);
int eh_hook_dlclose(void *handle);

/* ---- guarded passes over slots -------------------------------------------------------------------- */

typedef struct slot_access {
  eh_image *image;
  eh_slot slot;
  elfhook_handle *handle;
  uint32_t rebinding;
  void *seen;     /* value read in the read pass */
  void *original; /* what calls reached before: kept in the binding */
  void *expect;   /* write only if the slot still holds this (or `original`) */
  void *store;    /* value to write */
  bool wanted;
  bool written;
} slot_access;

typedef struct guarded_pass {
  slot_access *accesses;
  size_t count;
  bool write;
  eh_protection_map protections;
  int status;
} guarded_pass;

static bool in_visited_image(const slot_access *access, const struct dl_phdr_info *info) {
  return access->wanted && access->image->load_bias == info->dlpi_addr && access->image->phdr == info->dlpi_phdr;
}

/* Opens the read-only pages of the slots this pass writes in the image `info` names, adjacent ones
 * together (eh_protection_open); those beyond its first OPENED_TOGETHER are opened as they come. */
enum { OPENED_TOGETHER = 128 };
static void open_pages_of(guarded_pass *pass, const struct dl_phdr_info *info) {
  void **slots[OPENED_TOGETHER];
  const char *names[OPENED_TOGETHER];
  const eh_image *image = NULL;
  size_t count = 0;
  for (size_t i = 0; i < pass->count && count < OPENED_TOGETHER; i++) {
    slot_access *access = &pass->accesses[i];
    if (!in_visited_image(access, info)) continue;
    image = access->image;
    slots[count] = access->slot.address;
    names[count++] = access->slot.name;
  }
  if (!count) return;
  int status = eh_protection_open(&pass->protections, image, slots, names, count);
  if (status != ELFHOOK_OK) pass->status = status;
}

static int guarded_visit(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  guarded_pass *pass = context;
  if (pass->write) open_pages_of(pass, info);
  for (size_t i = 0; i < pass->count; i++) {
    slot_access *access = &pass->accesses[i];
    if (!in_visited_image(access, info)) continue;
    void **slot = access->slot.address;
    void *current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!pass->write) {
      access->seen = current;
      continue;
    }
    /* A lazy slot may have been resolved by the dynamic linker since it was read: still ours. */
    if (current != access->expect && current != access->original) continue;
    int status = eh_slot_store(&pass->protections, access->image, slot, access->store, access->slot.name);
    if (status == ELFHOOK_OK) {
      access->written = true;
      eh_statistics.slots_written++;
    } else {
      pass->status = status;
    }
  }
  /* Close this image's pages while glibc still guarantees the image is mapped. */
  int restored = eh_protection_restore(&pass->protections);
  if (restored != ELFHOOK_OK) pass->status = restored;
  return 0;
}

static int run_guarded_pass(slot_access *accesses, size_t count, bool write) {
  guarded_pass pass = {.accesses = accesses, .count = count, .write = write, .status = ELFHOOK_OK};
  if (count) dl_iterate_phdr(guarded_visit, &pass);
  eh_protection_map_free(&pass.protections);
  return pass.status;
}

/* ---- which images a handle applies to ------------------------------------------------------------ */

static bool matches_any(char *const *patterns, const char *path) {
  for (; patterns && *patterns; patterns++)
    if (eh_image_path_matches(*patterns, path)) return true;
  return false;
}

static bool handle_wants(const elfhook_handle *handle, const eh_image *image) {
  if (!image->parsed_ok || !eh_image_has_slot_tables(image) || image->is_vdso || image->is_dynamic_linker) return false;
  if (image->is_engine && !image->is_main_program) return false;
  if (handle->single_image) return image->load_bias == handle->image_bias;
  if (handle->only_images && !matches_any(handle->only_images, image->path)) return false;
  if (matches_any(handle->except_images, image->path)) return false;
  if (handle->filter) {
    elfhook_image view;
    eh_image_public_view(image, &view);
    return handle->filter(&view, handle->filter_context) != 0;
  }
  return true;
}

bool eh_is_hook_replacement(void *value) {
  for (elfhook_handle *handle = oldest_handle; handle; handle = handle->next)
    for (size_t r = 0; r < handle->count; r++)
      if (handle->rebindings[r].replacement == value) return true;
  return false;
}

/* ---- applying a handle --------------------------------------------------------------------------- */

static bool append_access(slot_access **accesses, size_t *count, size_t *capacity, slot_access access) {
  if (*count == *capacity) {
    size_t grown = *capacity ? *capacity * 2 : 32;
    slot_access *bigger = realloc(*accesses, grown * sizeof *bigger);
    if (!bigger) return false;
    *accesses = bigger;
    *capacity = grown;
  }
  (*accesses)[(*count)++] = access;
  return true;
}

static bool add_binding(elfhook_handle *handle, eh_binding binding) {
  if (handle->binding_count == handle->binding_capacity) {
    size_t grown = handle->binding_capacity ? handle->binding_capacity * 2 : 16;
    eh_binding *bigger = realloc(handle->bindings, grown * sizeof *bigger);
    if (!bigger) return false;
    handle->bindings = bigger;
    handle->binding_capacity = grown;
  }
  handle->bindings[handle->binding_count++] = binding;
  return true;
}

/* A function pointer in data (ABS64) is patched only in RELRO: read-only after start-up, so it
 * still holds what the dynamic linker put there (const tables of functions). A pointer in writable
 * data is a program variable: it may have been reassigned, or be a `replaced` variable holding an
 * original, which must never be turned into the hook (the call through it would recurse). */
static bool patchable(const slot_access *access) {
  return access->slot.kind != ELFHOOK_SLOT_ABS64 || access->slot.in_relro;
}

/* Every name of the handles being applied, sorted by hash (then handle, then rebinding, so that
 * the accesses to one slot come out oldest handle first): a slot's name is found by a binary
 * search, not compared with each handle's every name (~45 of them for the monitor: a fifth of a
 * first rebinding went to that loop). */
typedef struct wanted_name {
  uint32_t hash;
  uint32_t handle; /* index into the handles being applied */
  uint32_t rebinding;
} wanted_name;

static int compare_wanted(const void *left, const void *right) {
  const wanted_name *a = left, *b = right;
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  if (a->handle != b->handle) return a->handle < b->handle ? -1 : 1;
  return a->rebinding < b->rebinding ? -1 : a->rebinding > b->rebinding;
}

typedef struct slot_plan {
  elfhook_handle **handles; /* the handles being applied, oldest first */
  bool *wants_image;        /* per handle: it applies to the current image */
  wanted_name *names;
  size_t name_count;
  eh_image *image;
  slot_access *accesses;
  size_t count, capacity;
  bool out_of_memory;
} slot_plan;

/* Collects the accesses to `slot` of the handles that want its image and name it. */
static bool plan_slot(const eh_image *image, const eh_slot *slot, void *context) {
  (void)image;
  slot_plan *plan = context;
  size_t low = 0, high = plan->name_count;
  while (low < high) { /* the first name whose hash is not below the slot's */
    size_t middle = low + (high - low) / 2;
    if (plan->names[middle].hash < slot->name_hash) low = middle + 1;
    else high = middle;
  }
  for (size_t i = low; i < plan->name_count && plan->names[i].hash == slot->name_hash; i++) {
    const wanted_name *wanted = &plan->names[i];
    elfhook_handle *handle = plan->handles[wanted->handle];
    if (!plan->wants_image[wanted->handle] || strcmp(slot->name, handle->rebindings[wanted->rebinding].name) != 0)
      continue;
    slot_access access = {.image = plan->image, .slot = *slot, .handle = handle, .rebinding = wanted->rebinding, .wanted = true};
    if (!append_access(&plan->accesses, &plan->count, &plan->capacity, access)) {
      plan->out_of_memory = true;
      return false;
    }
  }
  return true;
}

/* Decides what each planned access writes. Accesses to one slot are adjacent and oldest handle
 * first: a newer one chains onto the older one's replacement, as if applied one after the other. */
static int resolve_accesses(slot_access *accesses, size_t count) {
  int status = ELFHOOK_OK;
  const slot_access *below = NULL; /* the last wanted access to the current slot */
  eh_scope_cache scopes = {0};      /* accesses come image after image */
  for (size_t i = 0; i < count; i++) {
    slot_access *access = &accesses[i];
    elfhook_handle *handle = access->handle;
    const struct rebinding *rebinding = &handle->rebindings[access->rebinding];
    if (below && below->slot.address != access->slot.address) below = NULL;
    void *current = below ? below->store : access->seen;
    access->wanted = current != rebinding->replacement;
    if (!access->wanted) continue;
    access->original = below || eh_is_hook_replacement(current)
                           ? current
                           : eh_resolve_original(&eh_loaded_images, access->image, &access->slot, current, &scopes);
    if (!access->original) {
      access->wanted = false;
      status = ELFHOOK_ERR_UNRESOLVED;
      continue;
    }
    access->wanted = below || patchable(access);
    if (!access->wanted) continue;
    access->expect = current;
    access->store = rebinding->replacement;
    below = access;
    /* `replaced` must hold a callable original before any slot sends calls to the hook. */
    if (!handle->originals[access->rebinding]) {
      handle->originals[access->rebinding] = access->original;
      if (rebinding->replaced) __atomic_store_n(rebinding->replaced, access->original, __ATOMIC_RELEASE);
    }
  }
  eh_scope_cache_release(&scopes);
  return status;
}

/* Applies `handles` (oldest first) to `images` in one scan of their slots and one guarded write. */
static int apply(elfhook_handle **handles, size_t handle_count, eh_image **images, size_t image_count) {
  /* Filters of the names: most slots are rejected by a bit test or two. */
  eh_name_filter name_filter = {{0}, {0}};
  size_t name_count = 0;
  for (size_t h = 0; h < handle_count; h++) name_count += handles[h]->count;
  slot_plan plan = {.handles = handles,
                    .wants_image = calloc(handle_count + 1, sizeof *plan.wants_image),
                    .names = calloc(name_count + 1, sizeof *plan.names)};
  bool planned = plan.wants_image && plan.names;
  for (size_t h = 0; planned && h < handle_count; h++) {
    for (uint32_t r = 0; r < handles[h]->count; r++) {
      eh_name_filter_add(&name_filter, handles[h]->rebindings[r].name, handles[h]->hashes[r]);
      plan.names[plan.name_count++] = (wanted_name){handles[h]->hashes[r], (uint32_t)h, r};
    }
  }
  if (planned) qsort(plan.names, plan.name_count, sizeof *plan.names, compare_wanted);
  for (size_t i = 0; planned && i < image_count && !plan.out_of_memory; i++) {
    bool any = false;
    for (size_t h = 0; h < handle_count; h++) any |= plan.wants_image[h] = handle_wants(handles[h], images[i]);
    if (!any) continue;
    plan.image = images[i];
    eh_image_each_slot(images[i], &name_filter, plan_slot, &plan);
  }
  free(plan.wants_image);
  free(plan.names);
  slot_access *accesses = plan.accesses;
  size_t count = plan.count;
  if (!planned || plan.out_of_memory) {
    free(accesses);
    return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory planning rebinding");
  }
  run_guarded_pass(accesses, count, false);
  int status = resolve_accesses(accesses, count);
  int write_status = run_guarded_pass(accesses, count, true);
  if (write_status != ELFHOOK_OK) status = write_status;

  for (size_t i = 0; i < count; i++) {
    slot_access *access = &accesses[i];
    if (!access->written) continue;
    eh_binding binding = {access->image->load_bias, access->image->phdr, access->slot.address, access->original,
                          access->rebinding};
    if (!add_binding(access->handle, binding))
      status = elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory recording a binding");
  }
  free(accesses);
  return status;
}

/* Gives images that appeared since the last look every handle that follows new images, oldest
 * first, so chains form in the same order as in images that were there from the start. */
static int absorb(eh_image **fresh, long fresh_count) {
  size_t count = 0;
  for (elfhook_handle *handle = oldest_handle; handle; handle = handle->next) count++;
  elfhook_handle **following = calloc(count + 1, sizeof *following);
  if (!following) return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory absorbing new images");
  size_t used = 0;
  for (elfhook_handle *handle = oldest_handle; handle; handle = handle->next)
    if (!handle->single_image && !(handle->flags & ELFHOOK_CURRENT_IMAGES_ONLY)) following[used++] = handle;
  int status = used ? apply(following, used, fresh, (size_t)fresh_count) : ELFHOOK_OK;
  free(following);
  return status;
}

int eh_sync_and_absorb(void) {
  eh_image **fresh = NULL;
  long fresh_count = eh_registry_sync(&eh_loaded_images, &fresh);
  if (fresh_count < 0) return (int)fresh_count;
  eh_statistics.images_parsed += (uint64_t)fresh_count;
  for (long i = 0; i < fresh_count; i++)
    if (!fresh[i]->parsed_ok) eh_statistics.images_skipped++;
  int status = fresh_count ? absorb(fresh, fresh_count) : ELFHOOK_OK;
  free(fresh);
  return status;
}

void eh_forget_image(const eh_image *image) {
  eh_inline_forget_image(image);
  for (elfhook_handle *handle = oldest_handle; handle; handle = handle->next) {
    size_t kept = 0;
    for (size_t b = 0; b < handle->binding_count; b++) {
      eh_binding binding = handle->bindings[b];
      if (binding.image_bias != image->load_bias || binding.image_phdr != image->phdr)
        handle->bindings[kept++] = binding;
    }
    handle->binding_count = kept;
  }
}

static int peek_counters(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  unsigned long long *counters = context;
  counters[0] = info->dlpi_adds;
  counters[1] = info->dlpi_subs;
  return 1;
}

bool eh_images_changed(void) {
  unsigned long long counters[2] = {0, 0};
  dl_iterate_phdr(peek_counters, counters);
  return counters[0] != __atomic_load_n(&eh_loaded_images.adds, __ATOMIC_RELAXED) ||
         counters[1] != __atomic_load_n(&eh_loaded_images.subs, __ATOMIC_RELAXED);
}

/* Called by the dlopen hook: patch whatever the dlopen brought in. */
void eh_absorb_new_images(void) {
  eh_lock();
  uint64_t before = eh_statistics.images_parsed;
  eh_sync_and_absorb();
  if (eh_statistics.images_parsed != before) eh_statistics.dlopen_absorbed++;
  eh_unlock();
}

/* ---- handles ------------------------------------------------------------------------------------- */

static void free_patterns(char **patterns) {
  for (char **p = patterns; p && *p; p++) free(*p);
  free(patterns);
}

static void handle_destroy(elfhook_handle *handle) {
  if (!handle) return;
  free(handle->rebindings);
  free(handle->hashes);
  free(handle->originals);
  free_patterns(handle->only_images);
  free_patterns(handle->except_images);
  free(handle->bindings);
  free(handle);
}

static bool copy_patterns(const char *const *patterns, char ***copy) {
  if (!patterns) return true;
  size_t n = 0;
  while (patterns[n]) n++;
  *copy = calloc(n + 1, sizeof **copy);
  if (!*copy) return false;
  for (size_t i = 0; i < n; i++)
    if (!((*copy)[i] = strdup(patterns[i]))) return false;
  return true;
}

static int handle_create(const struct rebinding *rebindings, size_t count, const elfhook_options *options,
                         elfhook_handle **result) {
  if (!rebindings || count == 0) return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "no rebindings given");
  for (size_t r = 0; r < count; r++)
    if (!rebindings[r].name || !rebindings[r].replacement)
      return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "rebinding %zu has a NULL %s", r,
                               rebindings[r].name ? "replacement" : "name");
  if (options && (options->flags & ~(unsigned)ELFHOOK_CURRENT_IMAGES_ONLY))
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "unknown option flags 0x%x", options->flags);
  elfhook_handle *handle = calloc(1, sizeof *handle);
  if (!handle) return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory for a handle");
  handle->count = count;
  handle->rebindings = malloc(count * sizeof *handle->rebindings);
  handle->hashes = malloc(count * sizeof *handle->hashes);
  handle->originals = calloc(count, sizeof *handle->originals);
  bool ok = handle->rebindings && handle->hashes && handle->originals;
  if (ok && options) {
    handle->filter = options->filter;
    handle->filter_context = options->filter_context;
    handle->flags = options->flags;
    ok = copy_patterns(options->only_images, &handle->only_images) &&
         copy_patterns(options->except_images, &handle->except_images);
  }
  if (!ok) {
    handle_destroy(handle);
    return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory for a handle");
  }
  memcpy(handle->rebindings, rebindings, count * sizeof *rebindings);
  for (size_t r = 0; r < count; r++) handle->hashes[r] = eh_hash_name(rebindings[r].name);
  *result = handle;
  return ELFHOOK_OK;
}

static void link_newest(elfhook_handle *handle) {
  elfhook_handle **tail = &oldest_handle;
  while (*tail) tail = &(*tail)->next;
  *tail = handle;
}

/* Links the handles as the newest and applies them to every loaded image, in one pass. */
static int install(elfhook_handle **handles, size_t count) {
  for (size_t h = 0; h < count; h++) link_newest(handles[h]);
  return apply(handles, count, eh_loaded_images.images, eh_loaded_images.count);
}

/* Later images are found by hooking dlopen itself, the way fishhook registers with dyld; dlclose
 * too, so unloaded images leave the registry before anything can be mapped in their place.
 * Returns the engine's own handle the first time (to install with the caller's), else NULL. */
static elfhook_handle *dlopen_hook_to_install(void) {
  if (dlopen_hook_installed) return NULL;
  struct rebinding hooks[] = {
      {"dlopen", (void *)eh_hook_dlopen, (void **)&eh_real_dlopen},
      {"dlclose", (void *)eh_hook_dlclose, (void **)&eh_real_dlclose},
  };
  elfhook_handle *handle;
  if (handle_create(hooks, 2, NULL, &handle) != ELFHOOK_OK) return NULL;
  dlopen_hook_installed = true;
  return handle;
}

int elfhook_rebind(const struct rebinding *rebindings, size_t count, const elfhook_options *options,
                   elfhook_handle **result) {
  elfhook_clear_error();
  elfhook_handle *handle;
  int status = handle_create(rebindings, count, options, &handle);
  if (status != ELFHOOK_OK) return status;
  eh_lock();
  eh_sync_and_absorb();
  elfhook_handle *pair[2] = {NULL, handle};
  if (!(handle->flags & ELFHOOK_CURRENT_IMAGES_ONLY)) pair[0] = dlopen_hook_to_install();
  status = pair[0] ? install(pair, 2) : install(&handle, 1);
  eh_unlock();
  if (result) *result = handle;
  return status;
}

int elfhook_rebind_image(const void *header, intptr_t slide, const struct rebinding *rebindings, size_t count,
                         elfhook_handle **result) {
  elfhook_clear_error();
  elfhook_handle *handle;
  int status = handle_create(rebindings, count, NULL, &handle);
  if (status != ELFHOOK_OK) return status;
  eh_lock();
  eh_sync_and_absorb();
  /* The header as fishhook callers pass it (dladdr's dli_fbase), or the load bias again. */
  eh_image *image = eh_registry_find_bias(&eh_loaded_images, (uintptr_t)slide);
  if (image && header != image->header && (uintptr_t)header != (uintptr_t)slide &&
      !eh_image_contains(image, (uintptr_t)header))
    image = NULL;
  if (!image) {
    eh_unlock();
    handle_destroy(handle);
    return elfhook_set_error(ELFHOOK_ERR_IMAGE_NOT_FOUND, "no loaded image has header %p and load bias %#lx",
                             header, (unsigned long)slide);
  }
  if (!image->parsed_ok) {
    eh_unlock();
    handle_destroy(handle);
    return elfhook_set_error(ELFHOOK_ERR_MALFORMED_IMAGE, "%s could not be parsed", image->path);
  }
  handle->single_image = true;
  handle->image_bias = image->load_bias;
  status = install(&handle, 1);
  eh_unlock();
  if (result) *result = handle;
  return status;
}

int rebind_symbols(struct rebinding rebindings[], size_t rebindings_nel) {
  return elfhook_rebind(rebindings, rebindings_nel, NULL, NULL);
}

int rebind_symbols_image(void *header, intptr_t slide, struct rebinding rebindings[], size_t rebindings_nel) {
  return elfhook_rebind_image(header, slide, rebindings, rebindings_nel, NULL);
}

/* ---- undo ------------------------------------------------------------------------------------------ */

static eh_binding *binding_on(elfhook_handle *handle, void **slot) {
  for (size_t b = 0; b < handle->binding_count; b++)
    if (handle->bindings[b].slot == slot) return &handle->bindings[b];
  return NULL;
}

/* A newer handle whose binding on `slot` was made on top of `replacement`. */
static eh_binding *binding_above(elfhook_handle *handle, void **slot, void *replacement) {
  for (elfhook_handle *newer = handle->next; newer; newer = newer->next) {
    eh_binding *binding = binding_on(newer, slot);
    if (binding && binding->previous == replacement) return binding;
  }
  return NULL;
}

int elfhook_unbind(elfhook_handle *handle) {
  elfhook_clear_error();
  eh_lock();
  elfhook_handle **link = &oldest_handle;
  while (*link && *link != handle) link = &(*link)->next;
  if (!handle || !*link) {
    eh_unlock();
    return elfhook_set_error(ELFHOOK_ERR_UNKNOWN_HANDLE, "handle %p is not a live rebinding", (void *)handle);
  }
  eh_sync_and_absorb(); /* forgets the bindings of images unloaded since */

  slot_access *restores = calloc(handle->binding_count + 1, sizeof *restores);
  if (!restores) {
    eh_unlock();
    return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory undoing a rebinding");
  }
  size_t count = 0;
  for (size_t b = 0; b < handle->binding_count; b++) {
    eh_binding *binding = &handle->bindings[b];
    void *replacement = handle->rebindings[binding->rebinding].replacement;
    eh_binding *above = binding_above(handle, binding->slot, replacement);
    if (above) {
      above->previous = binding->previous; /* the newer hook now sits directly on ours' original */
      continue;
    }
    eh_image *image = eh_registry_find_bias(&eh_loaded_images, binding->image_bias);
    if (!image || image->phdr != binding->image_phdr) continue;
    eh_slot slot = {.address = binding->slot, .name = handle->rebindings[binding->rebinding].name};
    restores[count] = (slot_access){.image = image, .slot = slot, .expect = replacement,
                                    .original = replacement, .store = binding->previous, .wanted = true};
    count++;
  }
  int status = run_guarded_pass(restores, count, true);
  free(restores);

  /* Newer hooks that call through to ours now call through to what ours called. */
  for (size_t r = 0; r < handle->count; r++) {
    void *replacement = handle->rebindings[r].replacement;
    for (elfhook_handle *newer = handle->next; newer; newer = newer->next) {
      for (size_t n = 0; n < newer->count; n++) {
        if (newer->originals[n] != replacement || strcmp(newer->rebindings[n].name, handle->rebindings[r].name) != 0)
          continue;
        newer->originals[n] = handle->originals[r];
        if (newer->rebindings[n].replaced)
          __atomic_store_n(newer->rebindings[n].replaced, handle->originals[r], __ATOMIC_RELEASE);
      }
    }
  }
  *link = handle->next;
  handle_destroy(handle);
  eh_unlock();
  return status;
}
