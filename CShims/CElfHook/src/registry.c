/* The images loaded now, kept in step with dl_iterate_phdr.
 *
 * glibc counts every load and unload (dlpi_adds, dlpi_subs); when neither moved since the last sync
 * the walk stops at the first image. Otherwise each image is matched by load bias and program
 * header address: a known image is kept as it is (never parsed again), an unknown one is parsed,
 * and images that vanished are dropped. Called with the engine lock held. */
#include "engine_private.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct sync_walk {
  eh_registry *registry;
  eh_image **fresh;
  size_t fresh_count, fresh_capacity;
  unsigned long long adds, subs;
  bool out_of_memory;
  bool unchanged;
} sync_walk;

static void engine_anchor(void) {}

/* Another library can be mapped where an unloaded one was, at the same bias and with the same
 * program header address: the name is part of the identity. */
static eh_image *find(eh_registry *registry, const struct dl_phdr_info *info) {
  for (size_t i = 0; i < registry->count; i++) {
    eh_image *image = registry->images[i];
    if (image->load_bias == info->dlpi_addr && image->phdr == info->dlpi_phdr &&
        strcmp(image->loader_name, info->dlpi_name ? info->dlpi_name : "") == 0)
      return image;
  }
  return NULL;
}

static bool append(eh_image ***array, size_t *count, size_t *capacity, eh_image *image) {
  if (*count == *capacity) {
    size_t grown = *capacity ? *capacity * 2 : 64;
    eh_image **bigger = realloc(*array, grown * sizeof *bigger);
    if (!bigger) return false;
    *array = bigger;
    *capacity = grown;
  }
  (*array)[(*count)++] = image;
  return true;
}

static int visit(struct dl_phdr_info *info, size_t size, void *context) {
  sync_walk *walk = context;
  eh_registry *registry = walk->registry;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs && registry->synced_once &&
      info->dlpi_adds == registry->adds && info->dlpi_subs == registry->subs) {
    walk->unchanged = true;
    return 1; /* nothing was loaded or unloaded since the last sync */
  }
  walk->adds = info->dlpi_adds;
  walk->subs = info->dlpi_subs;

  eh_image *image = find(registry, info);
  if (image) {
    image->seen = true;
    return 0;
  }
  image = eh_image_create(info, (const void *)engine_anchor);
  if (!image || !append(&registry->images, &registry->count, &registry->capacity, image)) {
    eh_image_destroy(image);
    walk->out_of_memory = true;
    return 1;
  }
  image->seen = true;
  if (!append(&walk->fresh, &walk->fresh_count, &walk->fresh_capacity, image)) walk->out_of_memory = true;
  return walk->out_of_memory;
}

long eh_registry_sync(eh_registry *registry, eh_image ***fresh) {
  for (size_t i = 0; i < registry->count; i++) registry->images[i]->seen = false;
  sync_walk walk = {.registry = registry};
  dl_iterate_phdr(visit, &walk);
  if (walk.out_of_memory) {
    free(walk.fresh);
    return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory while reading the loaded images");
  }
  if (!walk.unchanged) {
    registry->synced_once = true;
    registry->adds = walk.adds;
    registry->subs = walk.subs;
    size_t kept = 0;
    for (size_t i = 0; i < registry->count; i++) {
      eh_image *image = registry->images[i];
      if (image->seen) {
        registry->images[kept++] = image;
      } else {
        eh_forget_image(image);
        eh_image_destroy(image);
      }
    }
    registry->count = kept;
  }
  long count = (long)walk.fresh_count;
  if (fresh) *fresh = walk.fresh;
  else free(walk.fresh);
  return count;
}

eh_image *eh_registry_find_bias(eh_registry *registry, uintptr_t load_bias) {
  for (size_t i = 0; i < registry->count; i++)
    if (registry->images[i]->load_bias == load_bias) return registry->images[i];
  return NULL;
}
