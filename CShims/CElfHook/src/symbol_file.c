/* A function's address and size, from the image's .dynsym in memory or its file's .symtab.
 *
 * .symtab is not loaded: it is read from the image's file, mapped read-only for the look-up and
 * unmapped after. Every offset and count taken from the file is checked against the file's size
 * before it is followed, so a truncated or corrupt file is "not found", never a crash. No libelf:
 * the engine is injected into processes on machines that may not have it. */
#include "engine_private.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a scan looks for: a name, or the symbol that starts at an address. */
typedef struct symbol_query {
  const char *name;
  size_t name_length;
  uintptr_t address;
} symbol_query;

static bool is_function(const ElfW(Sym) *sym) {
  int type = ELF64_ST_TYPE(sym->st_info);
  return sym->st_shndx != SHN_UNDEF && (type == STT_FUNC || type == STT_GNU_IFUNC);
}

/* Whether `sym` answers `query`; names are compared within [strtab, strtab + strsz). */
static bool matches(const symbol_query *query, const ElfW(Sym) *sym, const char *strtab, size_t strsz,
                    uintptr_t load_bias) {
  if (!is_function(sym)) return false;
  if (!query->name) return load_bias + sym->st_value == query->address;
  if (sym->st_name >= strsz || strsz - sym->st_name < query->name_length + 1) return false;
  return memcmp(strtab + sym->st_name, query->name, query->name_length + 1) == 0;
}

static void fill(eh_symbol *symbol, const ElfW(Sym) *sym, uintptr_t load_bias, bool from_symtab) {
  symbol->address = load_bias + sym->st_value;
  symbol->size = sym->st_size;
  symbol->from_symtab = from_symtab;
  symbol->is_ifunc = ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC;
  symbol->is_local = ELF64_ST_BIND(sym->st_info) == STB_LOCAL;
}

/* One symbol table: the image's .dynsym in memory, or a section of its file (every offset checked
 * against the file's size). */
typedef struct symbol_table {
  const ElfW(Sym) *symbols;
  size_t count;
  const char *strtab;
  size_t strsz;
} symbol_table;

/* True when [offset, offset + size) lies in a file of `file_size` bytes. */
static bool in_file(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

/* Calls `visit` with each section of type `section_type` (SHT_SYMTAB, SHT_DYNSYM) of a 64-bit ELF
 * file mapped at `file`, until it returns true; whether one did. */
static bool each_symbol_table(const uint8_t *file, size_t file_size, uint32_t section_type,
                              bool (*visit)(const symbol_table *table, void *context), void *context) {
  if (file_size < sizeof(ElfW(Ehdr)) || memcmp(file, ELFMAG, SELFMAG) != 0 || file[EI_CLASS] != ELFCLASS64)
    return false;
  const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)file;
  if (header->e_shentsize != sizeof(ElfW(Shdr)) ||
      !in_file(header->e_shoff, (uint64_t)header->e_shnum * sizeof(ElfW(Shdr)), file_size))
    return false;
  const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(file + header->e_shoff);
  for (ElfW(Half) i = 0; i < header->e_shnum; i++) {
    const ElfW(Shdr) *section = &sections[i];
    if (section->sh_type != section_type || section->sh_entsize != sizeof(ElfW(Sym)) ||
        section->sh_link >= header->e_shnum || !in_file(section->sh_offset, section->sh_size, file_size) ||
        section->sh_offset % _Alignof(ElfW(Sym)) != 0)
      continue;
    const ElfW(Shdr) *strings = &sections[section->sh_link];
    if (strings->sh_type != SHT_STRTAB || !in_file(strings->sh_offset, strings->sh_size, file_size)) continue;
    symbol_table table = {(const ElfW(Sym) *)(file + section->sh_offset), section->sh_size / sizeof(ElfW(Sym)),
                          (const char *)(file + strings->sh_offset), strings->sh_size};
    if (visit(&table, context)) return true;
  }
  return false;
}

/* A search for one symbol (`query`), and where its answer goes. */
typedef struct symbol_search {
  const symbol_query *query;
  uintptr_t load_bias;
  eh_symbol *symbol;
  bool from_symtab;
} symbol_search;

/* Whether `table` holds the searched symbol (filled in when it does). */
static bool find_in_table(const symbol_table *table, void *context) {
  symbol_search *search = context;
  for (size_t s = 1; s < table->count; s++) {
    if (matches(search->query, &table->symbols[s], table->strtab, table->strsz, search->load_bias)) {
      fill(search->symbol, &table->symbols[s], search->load_bias, search->from_symtab);
      return true;
    }
  }
  return false;
}

static bool find_in_dynsym(const eh_image *image, const symbol_query *query, eh_symbol *symbol) {
  if (!image->parsed_ok || !image->symtab || !image->strtab) return false;
  symbol_search search = {query, image->load_bias, symbol, false};
  return find_in_table(&(symbol_table){image->symtab, image->symbol_count, image->strtab, image->strsz}, &search);
}

/* Looks in the file's sections of type `section_type` (SHT_SYMTAB, SHT_DYNSYM). */
static bool scan_file(const uint8_t *file, size_t file_size, uintptr_t load_bias, const symbol_query *query,
                      eh_symbol *symbol, uint32_t section_type) {
  symbol_search search = {query, load_bias, symbol, section_type == SHT_SYMTAB};
  return each_symbol_table(file, file_size, section_type, find_in_table, &search);
}

/* Maps a whole regular file read-only; NULL when it cannot. */
static const uint8_t *map_file(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat status;
  void *file = MAP_FAILED;
  if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_size > 0) {
    *size = (size_t)status.st_size;
    file = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  return file == MAP_FAILED ? NULL : file;
}

static bool find_in_file(const eh_image *image, const symbol_query *query, eh_symbol *symbol) {
  if (!image->path || image->path[0] != '/') return false;
  size_t size = 0;
  const uint8_t *file = map_file(image->path, &size);
  if (!file) return false;
  bool found = scan_file(file, size, image->load_bias, query, symbol, SHT_SYMTAB);
  munmap((void *)file, size);
  return found;
}

/* The symbol must point into an executable load segment of the image that was searched: a .symtab
 * read from a file that was replaced on disk since it was loaded must not send us elsewhere. */
static bool in_executable_segment(const eh_image *image, uintptr_t address) {
  for (ElfW(Half) i = 0; i < image->phnum; i++) {
    const ElfW(Phdr) *ph = &image->phdr[i];
    uintptr_t start = image->load_bias + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && address >= start && address < start + ph->p_memsz)
      return true;
  }
  return false;
}

int eh_find_function_symbol(const eh_image *image, const char *name, eh_symbol *symbol) {
  symbol_query query = {.name = name, .name_length = strlen(name)};
  if ((find_in_dynsym(image, &query, symbol) || find_in_file(image, &query, symbol)) &&
      in_executable_segment(image, symbol->address))
    return ELFHOOK_OK;
  return ELFHOOK_ERR_SYMBOL_NOT_FOUND;
}

typedef struct wanted_functions {
  uintptr_t load_bias;
  const char *const *names;
  size_t count;
  void **addresses; /* per name: its address, NULL until found */
} wanted_functions;

/* Puts in `addresses` the wanted functions that `table` defines (those already found are kept).
 * Returns false: every table is read. */
static bool collect(const symbol_table *table, void *context) {
  wanted_functions *wanted = context;
  for (size_t s = 1; s < table->count; s++) {
    const ElfW(Sym) *sym = &table->symbols[s];
    if (!is_function(sym) || sym->st_name >= table->strsz || ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC) continue;
    const char *name = table->strtab + sym->st_name;
    size_t left = table->strsz - sym->st_name;
    for (size_t n = 0; n < wanted->count; n++) {
      if (wanted->addresses[n] || name[0] != wanted->names[n][0]) continue;
      size_t length = strlen(wanted->names[n]);
      if (left > length && memcmp(name, wanted->names[n], length + 1) == 0)
        wanted->addresses[n] = (void *)(wanted->load_bias + sym->st_value);
    }
  }
  return false;
}

size_t eh_find_function_symbols(const eh_image *image, const char *const *names, size_t count, void **addresses) {
  for (size_t n = 0; n < count; n++) addresses[n] = NULL;
  wanted_functions wanted = {image->load_bias, names, count, addresses};
  if (image->parsed_ok && image->symtab && image->strtab)
    collect(&(symbol_table){image->symtab, image->symbol_count, image->strtab, image->strsz}, &wanted);
  size_t found = 0;
  for (size_t n = 0; n < count; n++) found += addresses[n] != NULL;
  if (found < count && image->path && image->path[0] == '/') {
    size_t size = 0;
    const uint8_t *file = map_file(image->path, &size);
    if (file) {
      each_symbol_table(file, size, SHT_SYMTAB, collect, &wanted);
      munmap((void *)file, size);
    }
  }
  found = 0;
  for (size_t n = 0; n < count; n++) {
    if (addresses[n] && !in_executable_segment(image, (uintptr_t)addresses[n])) addresses[n] = NULL;
    found += addresses[n] != NULL;
  }
  return found;
}

size_t eh_function_size_at(const eh_image *image, uintptr_t address) {
  symbol_query query = {.address = address};
  eh_symbol symbol = {0};
  if (find_in_dynsym(image, &query, &symbol) || find_in_file(image, &query, &symbol)) return symbol.size;
  return 0;
}

/* The file offset of link-time address `address` and how many bytes of its segment follow it. */
static bool file_offset(const uint8_t *file, size_t file_size, uint64_t address, uint64_t *offset, size_t *available) {
  const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)file;
  if (header->e_phentsize != sizeof(ElfW(Phdr)) ||
      !in_file(header->e_phoff, (uint64_t)header->e_phnum * sizeof(ElfW(Phdr)), file_size))
    return false;
  const ElfW(Phdr) *segments = (const ElfW(Phdr) *)(file + header->e_phoff);
  for (ElfW(Half) i = 0; i < header->e_phnum; i++) {
    const ElfW(Phdr) *ph = &segments[i];
    if (ph->p_type != PT_LOAD || address < ph->p_vaddr || address - ph->p_vaddr >= ph->p_filesz) continue;
    *offset = ph->p_offset + (address - ph->p_vaddr);
    if (*offset >= file_size) return false;
    uint64_t in_segment = ph->p_filesz - (address - ph->p_vaddr), in_file_left = file_size - *offset;
    *available = (size_t)(in_segment < in_file_left ? in_segment : in_file_left);
    return true;
  }
  return false;
}

#if defined(__x86_64__)
#define EH_MACHINE EM_X86_64
#else
#define EH_MACHINE EM_AARCH64
#endif

int elfhook_inspect_function(const char *path, const char *symbol, elfhook_function_info *info) {
  elfhook_clear_error();
  if (!path || !symbol || !info)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_inspect_function needs a path, a symbol and info");
  memset(info, 0, sizeof *info);
  size_t size = 0;
  const uint8_t *file = map_file(path, &size);
  if (!file) return elfhook_set_error(ELFHOOK_ERR_MALFORMED_IMAGE, "%s: cannot be opened and mapped", path);
  int status = ELFHOOK_OK;
  const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)file;
  symbol_query query = {.name = symbol, .name_length = strlen(symbol)};
  eh_symbol found = {0};
  uint64_t offset = 0;
  size_t available = 0;
  if (size < sizeof *header || memcmp(file, ELFMAG, SELFMAG) != 0 || file[EI_CLASS] != ELFCLASS64 ||
      header->e_machine != EH_MACHINE) {
    status = elfhook_set_error(ELFHOOK_ERR_MALFORMED_IMAGE, "%s is not a 64-bit ELF file of the engine's architecture",
                               path);
  } else if (!scan_file(file, size, 0, &query, &found, SHT_DYNSYM) && !scan_file(file, size, 0, &query, &found, SHT_SYMTAB)) {
    status = elfhook_set_error(ELFHOOK_ERR_SYMBOL_NOT_FOUND, "symbol '%s' not found in the .dynsym or .symtab of %s%s",
                               symbol, path, " (a stripped file has no .symtab)");
  } else if (!file_offset(file, size, found.address, &offset, &available)) {
    status = elfhook_set_error(ELFHOOK_ERR_MALFORMED_IMAGE, "%s: '%s' at 0x%lx is in no loaded segment of the file", path,
                               symbol, (unsigned long)found.address);
  } else {
    info->address = found.address;
    info->size = found.size;
    info->in_dynsym = !found.from_symtab;
    info->is_local = found.is_local;
    info->is_ifunc = found.is_ifunc;
    char what[300];
    snprintf(what, sizeof what, "'%s' at 0x%lx", symbol, (unsigned long)found.address);
    info->attachable = found.is_ifunc ? ELFHOOK_ERR_INVALID_ARGUMENT
                                      : eh_arch_check_prologue(file + offset, available, found.size, what);
    if (found.is_ifunc) elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "%s is an IFUNC resolver", what);
    if (info->attachable != ELFHOOK_OK) snprintf(info->reason, sizeof info->reason, "%s", elfhook_last_error());
    elfhook_clear_error();
  }
  munmap((void *)file, size);
  return status;
}
