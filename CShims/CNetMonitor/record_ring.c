/* The record ring (cnetmonitor.h): a queue of records in a file mapped MAP_SHARED. What a hook
 * publishes is in the page cache at once, so it survives the process being killed the instant
 * after; the consumer is another process (`elfhook run`). */
#include "cnetmonitor.h"
#include "cnm_records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool cnm_expand_pattern(const char *pattern, int pid, char *out, size_t size) {
  size_t used = 0;
  for (const char *c = pattern; *c; c++) {
    int written;
    if (c[0] == '%' && c[1] == 'p') {
      written = snprintf(out + used, size - used, "%d", pid);
      c++;
    } else if (c[0] == '%' && c[1] == '%') {
      written = snprintf(out + used, size - used, "%%");
      c++;
    } else {
      written = snprintf(out + used, size - used, "%c", *c);
    }
    if (written < 0 || (size_t)written >= size - used) return false;
    used += (size_t)written;
  }
  return used > 0;
}

/* Creates the file exclusively: never follows a planted symlink, never opens what exists. A file
 * or a link at `base` (an earlier ring, a pid used again) is passed over for `base`.1, .2…; a
 * directory or a device (/dev/null) is refused: the name was not meant for a ring. */
static int create_exclusively(const char *base, char *path, size_t path_size) {
  for (int attempt = 0; attempt < 1000; attempt++) {
    int written = attempt == 0 ? snprintf(path, path_size, "%s", base)
                               : snprintf(path, path_size, "%s.%d", base, attempt);
    if (written < 0 || (size_t)written >= path_size) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
    struct stat existing;
    if (attempt == 0 && lstat(path, &existing) == 0 && !S_ISREG(existing.st_mode) && !S_ISLNK(existing.st_mode)) {
      errno = S_ISDIR(existing.st_mode) ? EISDIR : EEXIST;
      return -1;
    }
  }
  errno = EEXIST;
  return -1;
}

void cnm_process_name(char *name, size_t size) {
  memset(name, 0, size);
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t count = read(fd, name, size - 1);
  close(fd);
  if (count <= 0) return;
  name[count] = 0;
  if (name[count - 1] == '\n') name[count - 1] = 0;
}

cnm_queue *cnm_ring_create(const char *pattern, size_t capacity, size_t record_size, uint64_t record_layout,
                           size_t usable_records, char *path, size_t path_size) {
  char base[4096];
  if (!cnm_expand_pattern(pattern, (int)getpid(), base, sizeof base)) {
    errno = ENAMETOOLONG;
    return NULL;
  }
  size_t file_size = CNM_RING_QUEUE_OFFSET + cnm_queue_footprint(capacity, record_size);
  int fd = create_exclusively(base, path, path_size);
  if (fd < 0) return NULL;
  int error = ftruncate(fd, (off_t)file_size) == 0 ? 0 : errno;
  unsigned char *memory = MAP_FAILED;
  if (error == 0) {
    memory = mmap(NULL, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) error = errno;
  }
  /* Memory now, so that a full disk is an error here and never a SIGBUS in a hook later: for the
   * two headers, then (cnm_queue_make_usable) for the first `usable_records` records, their
   * sequence numbers included; the queue takes the others as it fills. On a kernel that cannot
   * populate a mapping, blocks for the whole file, every record usable. */
  bool whole_file = false;
  if (error == 0) {
    error = cnm_populate(memory, memory + CNM_RING_QUEUE_OFFSET + cnm_queue_header_size());
    if (error == EINVAL) {
      whole_file = true;
      error = posix_fallocate(fd, 0, (off_t)file_size);
    }
  }
  close(fd);
  cnm_queue *queue = NULL;
  if (error == 0) {
    queue = cnm_queue_format(cnm_ring_queue(memory), capacity, record_size);
    if (!queue) error = EINVAL;
  }
  if (error == 0 && !whole_file) error = cnm_queue_make_usable(queue, usable_records);
  if (error) {
    if (memory != MAP_FAILED) munmap(memory, file_size);
    unlink(path);
    errno = error;
    return NULL;
  }
  cnm_ring_header *header = (cnm_ring_header *)memory;
  header->version = CNM_RING_VERSION;
  header->queue_offset = CNM_RING_QUEUE_OFFSET;
  header->record_layout = record_layout;
  header->file_size = file_size;
  header->created_unix_ns = cnm_unix_ns();
  header->pid = (int32_t)getpid();
  cnm_process_name(header->process, sizeof header->process);
  /* The magic last: a reader never takes a half-written header for a ring. */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(header->magic, CNM_RING_MAGIC, sizeof header->magic);
  return queue;
}

void cnm_ring_unmap(cnm_queue *queue) {
  unsigned char *memory = (unsigned char *)queue - CNM_RING_QUEUE_OFFSET;
  munmap(memory, ((cnm_ring_header *)memory)->file_size);
}

const cnm_ring_header *cnm_ring_header_check(const void *memory, size_t size, uint64_t record_layout) {
  const cnm_ring_header *header = memory;
  if (size < CNM_RING_QUEUE_OFFSET || memcmp(header->magic, CNM_RING_MAGIC, sizeof header->magic) != 0) return NULL;
  if (header->version != CNM_RING_VERSION || header->queue_offset != CNM_RING_QUEUE_OFFSET) return NULL;
  if (header->record_layout != record_layout || header->file_size != size) return NULL;
  if (!cnm_queue_is_valid((const unsigned char *)memory + CNM_RING_QUEUE_OFFSET, size - CNM_RING_QUEUE_OFFSET,
                          (size_t)(record_layout & 0xffffffffu)))
    return NULL;
  return header;
}
