/* Atomic stores into GOT slots, through RELRO when needed.
 *
 * With full RELRO (-z relro -z now) the dynamic linker makes the GOT read-only after relocating
 * it. To rebind we make the page writable, store, and put back exactly the protection the page had
 * (not an assumed PROT_READ: another tool may have left it writable). Whether the page is writable
 * now is asked of the kernel with one process_vm_writev of the slot's own value onto itself, which
 * honours page protection (EFAULT when read-only); where that call is refused (seccomp), the page's
 * line of /proc/self/maps says it, at ~200 µs per read instead of ~1 µs. A page is opened once per
 * image and batch, however many of its slots are written, and closed before the batch leaves the
 * image; adjacent pages with the same protection are opened and closed together
 * (eh_protection_open), as each mprotect of part of a mapping splits it, and putting it back
 * merges it. The store itself is one aligned pointer-sized atomic store, so a thread calling
 * through the slot at that instant reaches either the old or the new function. */
#include "engine_private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static bool add_mapping(eh_protection_map *map, size_t *capacity, uintptr_t start, uintptr_t end, int protection) {
  if (map->count == *capacity) {
    size_t grown = *capacity ? *capacity * 2 : 256;
    void *bigger = realloc(map->mappings, grown * sizeof *map->mappings);
    if (!bigger) return false;
    map->mappings = bigger;
    *capacity = grown;
  }
  map->mappings[map->count++] = (struct eh_mapping){start, end, protection};
  return true;
}

/* Parses one "start-end perms …" line. */
static bool parse_line(eh_protection_map *map, size_t *capacity, const char *line) {
  char *cursor;
  uintptr_t start = strtoull(line, &cursor, 16);
  if (*cursor != '-') return true;
  uintptr_t end = strtoull(cursor + 1, &cursor, 16);
  if (*cursor != ' ' || strlen(cursor) < 4) return true;
  int protection = (cursor[1] == 'r' ? PROT_READ : 0) | (cursor[2] == 'w' ? PROT_WRITE : 0) |
                   (cursor[3] == 'x' ? PROT_EXEC : 0);
  return add_mapping(map, capacity, start, end, protection);
}

static int load_protections(eh_protection_map *map) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "open(/proc/self/maps): %s", strerror(errno));
  char buffer[8192];
  size_t used = 0, capacity = 0;
  bool ok = true;
  for (;;) {
    ssize_t got = read(fd, buffer + used, sizeof buffer - 1 - used);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    used += (size_t)got;
    buffer[used] = '\0';
    char *line = buffer, *newline;
    while (ok && (newline = strchr(line, '\n'))) {
      *newline = '\0';
      ok = parse_line(map, &capacity, line);
      line = newline + 1;
    }
    used = (size_t)(buffer + used - line);
    memmove(buffer, line, used);
    if (used == sizeof buffer - 1) used = 0; /* an absurdly long path: drop the line's tail */
  }
  close(fd);
  if (!ok) return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory reading /proc/self/maps");
  map->loaded = true;
  return ELFHOOK_OK;
}

static int protection_of(const eh_protection_map *map, uintptr_t address) {
  for (size_t i = 0; i < map->count; i++)
    if (address >= map->mappings[i].start && address < map->mappings[i].end) return map->mappings[i].protection;
  return -1;
}

void eh_protection_map_free(eh_protection_map *map) {
  free(map->mappings);
  *map = (eh_protection_map){0};
}

/* 1 when the page holding `slot` is writable now, 0 when not, -1 when the kernel will not say. */
static int probe_writable(void **slot) {
  void *value = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  struct iovec local = {&value, sizeof value}, remote = {slot, sizeof value};
  if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof value) return 1;
  return errno == EFAULT ? 0 : -1;
}

static int segment_protection(const eh_image *image, uintptr_t address) {
  for (ElfW(Half) i = 0; i < image->phnum; i++) {
    const ElfW(Phdr) *ph = &image->phdr[i];
    uintptr_t start = image->load_bias + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && address >= start && address < start + ph->p_memsz)
      return (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_X ? PROT_EXEC : 0);
  }
  return PROT_READ;
}

/* The protection `slot`'s page has now. */
static int current_protection(eh_protection_map *map, const eh_image *image, void **slot, const char *symbol) {
  int writable = probe_writable(slot);
  if (writable >= 0) return segment_protection(image, (uintptr_t)slot) | (writable ? PROT_WRITE : 0);
  if (!map->loaded) {
    int status = load_protections(map);
    if (status != ELFHOOK_OK) return status;
  }
  int prior = protection_of(map, (uintptr_t)slot);
  if (prior < 0)
    return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "slot %p for '%s' in %s is not in /proc/self/maps",
                             (void *)slot, symbol, image->path);
  return prior;
}

static bool loader_left_writable(const eh_image *image, uintptr_t address) {
  if (address >= image->relro.start && address < image->relro.end) return false;
  for (int i = 0; i < image->load_count; i++)
    if (address >= image->loads[i].start && address < image->loads[i].end) return image->load_writable[i];
  return false;
}

int eh_protection_restore(eh_protection_map *map) {
  int status = ELFHOOK_OK;
  for (size_t i = 0; i < map->open_count; i++) {
    struct eh_open_pages *open = &map->open[i];
    if (mprotect((void *)open->start, open->end - open->start, open->prior) != 0)
      status = elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %zu, restore) in %s: %s", (void *)open->start,
                                 (size_t)(open->end - open->start), open->path, strerror(errno));
  }
  map->open_count = 0;
  return status;
}

static bool is_open(const eh_protection_map *map, uintptr_t page) {
  for (size_t i = 0; i < map->open_count; i++)
    if (page >= map->open[i].start && page < map->open[i].end) return true;
  return false;
}

/* Makes [start, end) writable, keeping `prior` to put back. */
static int open_pages(eh_protection_map *map, const eh_image *image, uintptr_t start, uintptr_t end, int prior,
                      const char *symbol) {
  if (mprotect((void *)start, end - start, prior | PROT_WRITE) != 0)
    return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %zu, +W) for '%s' in %s: %s", (void *)start,
                             (size_t)(end - start), symbol, image->path, strerror(errno));
  map->open[map->open_count++] = (struct eh_open_pages){start, end, prior, image->path};
  return ELFHOOK_OK;
}

int eh_protection_open(eh_protection_map *map, const eh_image *image, void **const *slots,
                       const char *const *symbols, size_t count) {
  uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  struct page_to_open { uintptr_t page; size_t slot; int prior; } pages[EH_MAX_OPEN_PAGES];
  size_t found = 0, room = EH_MAX_OPEN_PAGES - map->open_count;
  for (size_t i = 0; i < count && found < room; i++) {
    uintptr_t address = (uintptr_t)slots[i], page = address & ~(page_size - 1);
    if (loader_left_writable(image, address) || is_open(map, page)) continue;
    size_t at = found; /* in address order: insertion */
    while (at > 0 && pages[at - 1].page > page) at--;
    if (at > 0 && pages[at - 1].page == page) continue;
    memmove(&pages[at + 1], &pages[at], (found - at) * sizeof pages[0]);
    pages[at] = (struct page_to_open){page, i, 0};
    found++;
  }
  for (size_t i = 0; i < found; i++) {
    pages[i].prior = current_protection(map, image, slots[pages[i].slot], symbols[pages[i].slot]);
    if (pages[i].prior < 0) return pages[i].prior;
  }
  for (size_t first = 0, last; first < found; first = last + 1) {
    for (last = first; last + 1 < found && pages[last + 1].page == pages[last].page + page_size &&
                       pages[last + 1].prior == pages[first].prior;
         last++) {
    }
    if (pages[first].prior & PROT_WRITE) continue; /* writable already: stored into as it is */
    int status = open_pages(map, image, pages[first].page, pages[last].page + page_size, pages[first].prior,
                            symbols[pages[first].slot]);
    if (status != ELFHOOK_OK) return status;
  }
  return ELFHOOK_OK;
}

int eh_slot_store(eh_protection_map *map, const eh_image *image, void **slot, void *value, const char *symbol) {
  uintptr_t address = (uintptr_t)slot;
  uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t page = address & ~(page_size - 1);
  if (loader_left_writable(image, address) || is_open(map, page)) {
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return ELFHOOK_OK;
  }
  int prior = current_protection(map, image, slot, symbol);
  if (prior < 0) return prior;
  if (prior & PROT_WRITE) {
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return ELFHOOK_OK;
  }
  if (map->open_count == EH_MAX_OPEN_PAGES) {
    int status = eh_protection_restore(map);
    if (status != ELFHOOK_OK) return status;
  }
  int status = open_pages(map, image, page, page + page_size, prior, symbol);
  if (status != ELFHOOK_OK) return status;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  return ELFHOOK_OK;
}

int eh_protection_map_load(eh_protection_map *map) { return load_protections(map); }

int eh_page_protection(uintptr_t address) {
  eh_protection_map map = {0};
  int status = load_protections(&map);
  int protection = status == ELFHOOK_OK ? protection_of(&map, address) : status;
  eh_protection_map_free(&map);
  if (protection == -1)
    return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "%p is not in /proc/self/maps", (void *)address);
  return protection;
}
