/* Enumeration of the loaded images and their import slots, and the engine's counters. */
#include "engine_private.h"

#include <stdlib.h>

int elfhook_enumerate_images(elfhook_image_visitor visitor, void *context) {
  if (!visitor) return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "no visitor given");
  eh_lock();
  int status = eh_sync_and_absorb();
  for (size_t i = 0; i < eh_loaded_images.count; i++) {
    elfhook_image view;
    eh_image_public_view(eh_loaded_images.images[i], &view);
    if (visitor(&view, context)) break;
  }
  eh_unlock();
  return status == ELFHOOK_ERR_NO_MEMORY ? status : ELFHOOK_OK;
}

typedef struct slot_snapshot {
  const eh_image *image;
  elfhook_slot *slots; /* NULL while counting */
  size_t count;
  bool out_of_memory;
} slot_snapshot;

static bool snapshot_slot(const eh_image *image, const eh_slot *slot, void *context) {
  slot_snapshot *snapshot = context;
  if (snapshot->slots)
    snapshot->slots[snapshot->count] =
        (elfhook_slot){slot->name, eh_slot_version(image, slot), slot->kind, slot->relocation_type, slot->address,
                       __atomic_load_n(slot->address, __ATOMIC_ACQUIRE), slot->in_relro};
  snapshot->count++;
  return true;
}

/* Counts the slots, then copies them and their current values, while the image cannot go away. */
static int snapshot_visit(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  slot_snapshot *snapshot = context;
  if (snapshot->image->load_bias != info->dlpi_addr || snapshot->image->phdr != info->dlpi_phdr) return 0;
  eh_image_each_slot(snapshot->image, NULL, snapshot_slot, snapshot);
  snapshot->slots = calloc(snapshot->count + 1, sizeof *snapshot->slots);
  snapshot->out_of_memory = !snapshot->slots;
  snapshot->count = 0;
  if (snapshot->slots) eh_image_each_slot(snapshot->image, NULL, snapshot_slot, snapshot);
  return 1;
}

int elfhook_enumerate_slots(uintptr_t load_bias, elfhook_slot_visitor visitor, void *context) {
  if (!visitor) return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "no visitor given");
  eh_lock();
  eh_sync_and_absorb();
  eh_image *image = eh_registry_find_bias(&eh_loaded_images, load_bias);
  int status = ELFHOOK_OK;
  if (!image)
    status = elfhook_set_error(ELFHOOK_ERR_IMAGE_NOT_FOUND, "no loaded image has load bias %#lx", (unsigned long)load_bias);
  else if (!image->parsed_ok)
    status = elfhook_set_error(ELFHOOK_ERR_MALFORMED_IMAGE, "%s could not be parsed", image->path);
  if (status != ELFHOOK_OK) {
    eh_unlock();
    return status;
  }
  slot_snapshot snapshot = {image, NULL, 0, false};
  dl_iterate_phdr(snapshot_visit, &snapshot);
  if (snapshot.out_of_memory) {
    eh_unlock();
    return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory listing slots");
  }
  elfhook_image view;
  eh_image_public_view(image, &view);
  for (size_t s = 0; s < snapshot.count; s++)
    if (visitor(&view, &snapshot.slots[s], context)) break;
  free(snapshot.slots);
  eh_unlock();
  return ELFHOOK_OK;
}

void elfhook_get_statistics(elfhook_statistics *result) {
  eh_lock();
  *result = eh_statistics;
  eh_unlock();
}
