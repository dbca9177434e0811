/* One loaded image: its load segments, RELRO range and import slots, parsed once from PT_DYNAMIC.
 *
 * The counterpart of fishhook's walk over __la_symbol_ptr / __nl_symbol_ptr: relocation →
 * DT_SYMTAB → DT_STRTAB. Every pointer taken from the dynamic section is checked against the
 * image's own load segments before it is read, so an inconsistent image is reported and skipped,
 * never crashed on. */
#include "engine_private.h"

#include <elf.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#if defined(__x86_64__)
#define EH_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define EH_R_GLOB_DAT R_X86_64_GLOB_DAT
#define EH_R_ABS64 R_X86_64_64
#elif defined(__aarch64__)
#define EH_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define EH_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define EH_R_ABS64 R_AARCH64_ABS64
#else
#error "elfhook supports x86_64 and aarch64"
#endif

/* What PT_DYNAMIC tells us, with pointers already made absolute. */
typedef struct dynamic_info {
  const ElfW(Sym) *symtab;
  const char *strtab;
  size_t strsz;
  const ElfW(Rela) *jmprel;
  size_t pltrelsz;
  ElfW(Sxword) pltrel;
  const ElfW(Rela) *rela;
  size_t relasz;
  size_t relacount; /* DT_RELACOUNT: the leading R_*_RELATIVE entries of DT_RELA, never slots */
  const ElfW(Half) *versym;
  const ElfW(Verneed) *verneed;
  size_t verneednum;
  const ElfW(Verdef) *verdef;
  size_t verdefnum;
  const uint32_t *sysv_hash;
  const uint32_t *gnu_hash;
} dynamic_info;

uint32_t eh_hash_name(const char *name) {
  uint32_t hash = 5381;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) hash = hash * 33 + *c;
  return hash & ~1u;
}


bool eh_image_contains(const eh_image *image, uintptr_t address) {
  for (int i = 0; i < image->load_count; i++)
    if (address >= image->loads[i].start && address < image->loads[i].end) return true;
  return false;
}

/* A pattern without a wildcard or an escape (a path a caller made literal, as the injected library
 * does with its executable's) is compared as it is: fnmatch costs ~1,400 instructions a call, and a
 * look-up in a `curl` matches 35 images, each by path and by base name. */
bool eh_image_path_matches(const char *pattern, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (!strpbrk(pattern, "*?[\\")) return strcmp(pattern, path) == 0 || strcmp(pattern, base) == 0;
  return fnmatch(pattern, path, 0) == 0 || fnmatch(pattern, base, 0) == 0;
}

/* True when [address, address + size) lies inside one load segment. */
static bool contains_span(const eh_image *image, const void *address, size_t size) {
  uintptr_t start = (uintptr_t)address;
  if (start + size < start) return false;
  for (int i = 0; i < image->load_count; i++)
    if (start >= image->loads[i].start && start + size <= image->loads[i].end) return true;
  return false;
}

static const char *describe(const eh_image *image) {
  return image->path[0] ? image->path : "(unnamed image)";
}

static bool malformed(eh_image *image, const char *what) {
  elfhook_append_error("skipped %s: %s", describe(image), what);
  image->parsed_ok = false;
  return false;
}

static char *image_path(const struct dl_phdr_info *info, bool is_main_program) {
  if (is_main_program) {
    char buffer[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    if (length > 0) {
      buffer[length] = '\0';
      return strdup(buffer);
    }
  }
  return strdup(info->dlpi_name ? info->dlpi_name : "");
}

/* Segments, RELRO and the ELF header, from the program headers. */
static void read_program_headers(eh_image *image) {
  uintptr_t lowest_offset_zero = UINTPTR_MAX;
  for (ElfW(Half) i = 0; i < image->phnum; i++) {
    const ElfW(Phdr) *ph = &image->phdr[i];
    uintptr_t start = image->load_bias + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && image->load_count < EH_MAX_LOAD_SEGMENTS) {
      image->load_writable[image->load_count] = (ph->p_flags & PF_W) != 0;
      if ((ph->p_flags & PF_W) && image->data.end == 0) image->data = (eh_range){start, start + ph->p_memsz};
      image->loads[image->load_count++] = (eh_range){start, start + ph->p_memsz};
      if (ph->p_offset == 0 && start < lowest_offset_zero) lowest_offset_zero = start;
    } else if (ph->p_type == PT_GNU_RELRO) {
      image->relro = (eh_range){start, start + ph->p_memsz};
    }
  }
  image->header = lowest_offset_zero == UINTPTR_MAX ? NULL : (const void *)lowest_offset_zero;
}

/* glibc relocates d_ptr values in place; the vDSO's (and musl's) stay relative. */
static uintptr_t absolute(const eh_image *image, ElfW(Addr) value) {
  return value < image->load_bias ? value + image->load_bias : value;
}

static bool read_dynamic(eh_image *image, dynamic_info *info) {
  const ElfW(Dyn) *dynamic = NULL;
  size_t capacity = 0;
  for (ElfW(Half) i = 0; i < image->phnum; i++) {
    if (image->phdr[i].p_type == PT_DYNAMIC) {
      dynamic = (const ElfW(Dyn) *)(image->load_bias + image->phdr[i].p_vaddr);
      capacity = image->phdr[i].p_memsz / sizeof(ElfW(Dyn));
    }
  }
  if (dynamic == NULL) return false; /* static images import nothing: not an error */
  if (!contains_span(image, dynamic, capacity * sizeof *dynamic))
    return malformed(image, "PT_DYNAMIC lies outside the load segments");

  for (size_t i = 0; i < capacity && dynamic[i].d_tag != DT_NULL; i++) {
    ElfW(Addr) value = dynamic[i].d_un.d_ptr;
    switch (dynamic[i].d_tag) {
    case DT_SYMTAB: info->symtab = (const ElfW(Sym) *)absolute(image, value); break;
    case DT_STRTAB: info->strtab = (const char *)absolute(image, value); break;
    case DT_STRSZ: info->strsz = dynamic[i].d_un.d_val; break;
    case DT_JMPREL: info->jmprel = (const ElfW(Rela) *)absolute(image, value); break;
    case DT_PLTRELSZ: info->pltrelsz = dynamic[i].d_un.d_val; break;
    case DT_PLTREL: info->pltrel = dynamic[i].d_un.d_val; break;
    case DT_RELA: info->rela = (const ElfW(Rela) *)absolute(image, value); break;
    case DT_RELASZ: info->relasz = dynamic[i].d_un.d_val; break;
    case DT_RELACOUNT: info->relacount = dynamic[i].d_un.d_val; break;
    case DT_VERSYM: info->versym = (const ElfW(Half) *)absolute(image, value); break;
    case DT_VERNEED: info->verneed = (const ElfW(Verneed) *)absolute(image, value); break;
    case DT_VERNEEDNUM: info->verneednum = dynamic[i].d_un.d_val; break;
    case DT_VERDEF: info->verdef = (const ElfW(Verdef) *)absolute(image, value); break;
    case DT_VERDEFNUM: info->verdefnum = dynamic[i].d_un.d_val; break;
    case DT_HASH: info->sysv_hash = (const uint32_t *)absolute(image, value); break;
    case DT_GNU_HASH: info->gnu_hash = (const uint32_t *)absolute(image, value); break;
    default: break;
    }
  }
  return true;
}

/* One past the highest symbol index that `count` relocations at `table` name (0 when none). */
static bool highest_relocated_symbol(eh_image *image, const ElfW(Rela) *table, size_t count, uint32_t *bound) {
  if (!count) return true;
  if (!contains_span(image, table, count * sizeof *table))
    return malformed(image, "a relocation table lies outside the load segments");
  for (size_t i = 0; i < count; i++) {
    uint32_t index = ELF64_R_SYM(table[i].r_info);
    if (index >= *bound) *bound = index + 1;
  }
  return true;
}

/* The number of dynamic symbols: DT_HASH says it; DT_GNU_HASH needs a walk of its chains. */
static bool count_symbols(eh_image *image, const dynamic_info *info, uint32_t *count) {
  /* DT_GNU_HASH first, even where DT_HASH is there too (libc): its chains hold the name hashes. */
  if (!info->gnu_hash && info->sysv_hash) {
    if (!contains_span(image, info->sysv_hash, 2 * sizeof(uint32_t)))
      return malformed(image, "DT_HASH lies outside the load segments");
    *count = info->sysv_hash[1];
    return true;
  }
  if (!info->gnu_hash) return malformed(image, "neither DT_HASH nor DT_GNU_HASH");
  const uint32_t *table = info->gnu_hash;
  if (!contains_span(image, table, 4 * sizeof(uint32_t)))
    return malformed(image, "DT_GNU_HASH lies outside the load segments");
  uint32_t bucket_count = table[0], symbol_offset = table[1], bloom_words = table[2];
  const uint32_t *buckets = (const uint32_t *)((const char *)(table + 4) + bloom_words * sizeof(ElfW(Addr)));
  if (!contains_span(image, buckets, (size_t)bucket_count * sizeof(uint32_t)))
    return malformed(image, "DT_GNU_HASH buckets lie outside the load segments");
  uint32_t last = 0;
  for (uint32_t b = 0; b < bucket_count; b++)
    if (buckets[b] > last) last = buckets[b];
  if (last < symbol_offset) {
    /* No symbol is hashed (the image exports nothing). GNU ld then writes a fixed empty table
     * whose symbol offset is 1 whatever .dynsym holds, so the undefined symbols past it are
     * counted by the relocations that name them: those are the only ones the slots need. Every
     * PIE that exports nothing hits this on aarch64, where ld hashes no undefined symbol; x86_64's
     * ld also hashes undefined symbols that have no PLT entry (crt's __cxa_finalize), so there
     * the table is rarely empty. */
    *count = symbol_offset;
    return highest_relocated_symbol(image, info->jmprel, info->jmprel ? info->pltrelsz / sizeof(ElfW(Rela)) : 0, count) &&
           highest_relocated_symbol(image, info->rela, info->rela ? info->relasz / sizeof(ElfW(Rela)) : 0, count);
  }
  const uint32_t *chains = buckets + bucket_count;
  image->gnu_chains = chains;
  image->gnu_symbol_offset = symbol_offset;
  for (;;) {
    const uint32_t *entry = &chains[last - symbol_offset];
    if (!contains_span(image, entry, sizeof *entry))
      return malformed(image, "DT_GNU_HASH chain runs outside the load segments");
    if (*entry & 1u) break;
    last++;
  }
  *count = last + 1;
  return true;
}

static int slot_kind(uint32_t type) {
  switch (type) {
  case EH_R_JUMP_SLOT: return ELFHOOK_SLOT_JUMP_SLOT;
  case EH_R_GLOB_DAT: return ELFHOOK_SLOT_GLOB_DAT;
  case EH_R_ABS64: return ELFHOOK_SLOT_ABS64;
  default: return 0;
  }
}

/* True when the relocation fills an import slot; `kind` receives which. Reads the symbol only for
 * ABS64, which counts only as a function pointer with addend 0. */
static bool is_slot(const eh_image *image, const ElfW(Rela) *relocation, int *kind) {
  *kind = slot_kind(ELF64_R_TYPE(relocation->r_info));
  uint32_t index = ELF64_R_SYM(relocation->r_info);
  if (*kind == 0 || index == 0) return false;
  if (*kind != ELFHOOK_SLOT_ABS64) return true;
  unsigned symbol_type = ELF64_ST_TYPE(image->symtab[index].st_info);
  return relocation->r_addend == 0 && (symbol_type == STT_FUNC || symbol_type == STT_GNU_IFUNC);
}

/* Whether `table` (`count` relocations) lies inside the load segments. Its entries are checked
 * one by one only when they are offered as slots (eh_image_each_slot): validating every relocation
 * of every image up front was a sixth of a first rebinding (callgrind, curl: 0.47 M of 2.75 M). */
static bool check_table(eh_image *image, const ElfW(Rela) *table, size_t count) {
  if (count && !contains_span(image, table, count * sizeof *table))
    return malformed(image, "a relocation table lies outside the load segments");
  return true;
}

bool eh_image_has_slot_tables(const eh_image *image) { return image->table_counts[0] + image->table_counts[1] > 0; }

/* Whether a slot's target is a pointer-aligned word inside the image's load segments. */
static bool slot_target_is_valid(const eh_image *image, uintptr_t address) {
  if (address % sizeof(void *) != 0) return false;
  return (address >= image->data.start && address + sizeof(void *) <= image->data.end) ||
         contains_span(image, (const void *)address, sizeof(void *));
}

/* Room for the name hashes of the symbols DT_GNU_HASH does not index (the undefined ones), each
 * computed when a scan first needs it (`unindexed_hash`): hashing every name of every image was
 * a quarter of a first rebinding (callgrind, curl: 0.62 M of 2.55 M instructions). */
static bool hash_unindexed_names(eh_image *image) {
  uint32_t count = image->gnu_chains ? image->gnu_symbol_offset : image->symbol_count;
  if (count > image->symbol_count) count = image->symbol_count;
  image->unindexed_hashes = calloc(count + 1, sizeof *image->unindexed_hashes);
  if (!image->unindexed_hashes) return malformed(image, "out of memory for its name hashes");
  image->unindexed_count = count;
  return true;
}

/* The hash of unindexed symbol `index` (< unindexed_count), computed once. Every scan holds the
 * engine's lock. */
static uint32_t unindexed_hash(const eh_image *image, uint32_t index) {
  uint32_t stored = image->unindexed_hashes[index];
  if (stored == 0) {
    ElfW(Word) name = image->symtab[index].st_name;
    stored = (name < image->strsz ? eh_hash_name(image->strtab + name) : 0) | 1u;
    image->unindexed_hashes[index] = stored;
  }
  return stored & ~1u;
}

static uint32_t slot_hash(const eh_image *image, uint32_t index) {
  if (index < image->unindexed_count) return unindexed_hash(image, index);
  return image->gnu_chains[index - image->gnu_symbol_offset] & ~1u;
}

/* The prefix filter's bit for the name `first` and `second` begin (`second` 0 for a name of one
 * byte): their low six bits. */
static uint32_t prefix_bit(unsigned char first, unsigned char second) { return (first & 63u) << 6 | (second & 63u); }

void eh_name_filter_add(eh_name_filter *filter, const char *name, uint32_t hash) {
  filter->hashes[(hash >> 6) & 15] |= UINT64_C(1) << (hash & 63);
  unsigned char first = (unsigned char)name[0];
  uint32_t bit = prefix_bit(first, first ? (unsigned char)name[1] : 0);
  filter->prefixes[bit >> 6] |= UINT64_C(1) << (bit & 63);
}

static bool passes(const eh_name_filter *filter, uint32_t hash) {
  return filter->hashes[(hash >> 6) & 15] & (UINT64_C(1) << (hash & 63));
}

/* Whether the name of unindexed symbol `index` may be one of the filter's: its first two bytes
 * (read within DT_STRSZ), then its hash. A name past DT_STRSZ is never a slot (eh_image_each_slot). */
static bool unindexed_passes(const eh_image *image, const eh_name_filter *filter, uint32_t index) {
  ElfW(Word) name = image->symtab[index].st_name;
  if (name >= image->strsz) return false;
  unsigned char first = (unsigned char)image->strtab[name];
  unsigned char second = first && name + 1 < image->strsz ? (unsigned char)image->strtab[name + 1] : 0;
  uint32_t bit = prefix_bit(first, second);
  return (filter->prefixes[bit >> 6] & (UINT64_C(1) << (bit & 63))) && passes(filter, unindexed_hash(image, index));
}

/* Marks the unindexed symbols (the undefined ones, whose names must be read) that pass the filter:
 * read in order, and relocations then test one bit each, where reading names per relocation jumps
 * about the string table (thousands of cache misses in libcrypto). An indexed symbol is tested by
 * its relocation: its hash is one word of DT_GNU_HASH's chains, which lie in symbol order, so
 * the 80% of symbols that are defined are never visited (0.15 M instructions of curl's first
 * rebinding). NULL when out of memory. */
static uint8_t *candidate_symbols(const eh_image *image, const eh_name_filter *filter) {
  uint8_t *marks = calloc(image->unindexed_count / 8 + 1, 1);
  if (!marks) return NULL;
  for (uint32_t i = 1; i < image->unindexed_count; i++)
    if (unindexed_passes(image, filter, i)) marks[i / 8] |= (uint8_t)(1u << (i % 8));
  return marks;
}

/* Whether symbol `index` (< symbol_count) may have a name the filter wants. */
static bool candidate(const eh_image *image, const eh_name_filter *filter, const uint8_t *marks, uint32_t index) {
  if (index < image->unindexed_count) return marks[index / 8] & (1u << (index % 8));
  return passes(filter, image->gnu_chains[index - image->gnu_symbol_offset] & ~1u);
}

void eh_image_each_slot(const eh_image *image, const eh_name_filter *filter, eh_slot_callback callback, void *context) {
  uint8_t *marks = NULL;
  if (filter && !(marks = candidate_symbols(image, filter))) filter = NULL; /* slower, same result */
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *table = image->tables[t];
    for (size_t i = 0; i < image->table_counts[t]; i++) {
      const ElfW(Rela) *relocation = &table[i];
      uint32_t index = ELF64_R_SYM(relocation->r_info);
      if (index >= image->symbol_count || (marks && !candidate(image, filter, marks, index))) continue;
      if (t == 1 && (uintptr_t)relocation >= image->jump_table.start && (uintptr_t)relocation < image->jump_table.end)
        continue;
      int kind;
      if (!is_slot(image, relocation, &kind)) continue;
      if (image->symtab[index].st_name >= image->strsz) continue; /* a name past DT_STRSZ: not a slot to trust */
      uintptr_t address = image->load_bias + relocation->r_offset;
      if (!slot_target_is_valid(image, address)) continue;
      eh_slot slot = {
          .address = (void **)address,
          .symbol_index = index,
          .name_hash = slot_hash(image, index),
          .name = image->strtab + image->symtab[index].st_name,
          .kind = (elfhook_slot_kind)kind,
          .relocation_type = ELF64_R_TYPE(relocation->r_info),
          .in_relro = address >= image->relro.start && address < image->relro.end,
      };
      if (!callback(image, &slot, context)) {
        free(marks);
        return;
      }
    }
  }
  free(marks);
}

static int compare_addresses(const void *left, const void *right) {
  uintptr_t a = *(const uintptr_t *)left, b = *(const uintptr_t *)right;
  return a < b ? -1 : a > b;
}

/* A non-PIE executable's canonical PLT entries (`has_canonical_plt`), sorted. */
static bool gather_canonical_plts(eh_image *image) {
  uint32_t count = 0;
  for (uint32_t i = 1; i < image->symbol_count; i++)
    count += image->symtab[i].st_shndx == SHN_UNDEF && image->symtab[i].st_value != 0;
  if (count == 0) return true;
  image->canonical_plts = malloc(count * sizeof *image->canonical_plts);
  if (!image->canonical_plts) return malformed(image, "out of memory for its canonical PLT entries");
  for (uint32_t i = 1; i < image->symbol_count; i++)
    if (image->symtab[i].st_shndx == SHN_UNDEF && image->symtab[i].st_value != 0)
      image->canonical_plts[image->canonical_plt_count++] = image->load_bias + image->symtab[i].st_value;
  qsort(image->canonical_plts, count, sizeof *image->canonical_plts, compare_addresses);
  image->has_canonical_plt = true;
  return true;
}

static bool parse_slots(eh_image *image) {
  dynamic_info info = {0};
  if (!read_dynamic(image, &info)) return image->parsed_ok;
  if (!info.symtab || !info.strtab) return true; /* nothing imported */
  if (!contains_span(image, info.strtab, info.strsz))
    return malformed(image, "DT_STRTAB/DT_STRSZ lie outside the load segments");
  if (info.jmprel && info.pltrel != DT_RELA) return malformed(image, "DT_PLTREL is not DT_RELA");
  if (!count_symbols(image, &info, &image->symbol_count)) return false;
  if (image->symbol_count && !contains_span(image, info.symtab, image->symbol_count * sizeof(ElfW(Sym))))
    return malformed(image, "DT_SYMTAB lies outside the load segments");
  image->symtab = info.symtab;
  image->strtab = info.strtab;
  image->strsz = info.strsz;
  image->versym = info.versym;
  image->verneed = info.verneed;
  image->verneednum = info.verneednum;
  image->verdef = info.verdef;
  image->verdefnum = info.verdefnum;

  size_t rela_count = info.rela ? info.relasz / sizeof(ElfW(Rela)) : 0;
  size_t relative_count = info.relacount <= rela_count ? info.relacount : 0;
  image->tables[0] = info.jmprel;
  image->table_counts[0] = info.jmprel ? info.pltrelsz / sizeof(ElfW(Rela)) : 0;
  image->tables[1] = info.rela ? info.rela + relative_count : NULL;
  image->table_counts[1] = rela_count - relative_count;
  image->jump_table = (eh_range){(uintptr_t)info.jmprel, (uintptr_t)info.jmprel + info.pltrelsz};
  if (!check_table(image, image->tables[0], image->table_counts[0])) return false;
  if (!check_table(image, image->tables[1], image->table_counts[1])) return false;
  if (!hash_unindexed_names(image)) return false;

  if (image->is_main_program && ((const ElfW(Ehdr) *)image->header)->e_type == ET_EXEC)
    return gather_canonical_plts(image);
  return true;
}

/* From DT_VERSYM and DT_VERNEED / DT_VERDEF, bounds-checked like everything read from memory. */
const char *eh_slot_version(const eh_image *image, const eh_slot *slot) {
  uint32_t index = slot->symbol_index;
  if (!image->versym || !contains_span(image, &image->versym[index], sizeof(ElfW(Half)))) return NULL;
  ElfW(Half) wanted = image->versym[index] & 0x7fff;
  if (wanted <= 1) return NULL; /* local or global base version */
  const char *need = (const char *)image->verneed;
  for (size_t n = 0; need && n < image->verneednum; n++) {
    const ElfW(Verneed) *entry = (const ElfW(Verneed) *)need;
    if (!contains_span(image, entry, sizeof *entry)) return NULL;
    const char *aux = need + entry->vn_aux;
    for (ElfW(Half) a = 0; a < entry->vn_cnt; a++) {
      const ElfW(Vernaux) *vernaux = (const ElfW(Vernaux) *)aux;
      if (!contains_span(image, vernaux, sizeof *vernaux)) return NULL;
      if (vernaux->vna_other == wanted)
        return vernaux->vna_name < image->strsz ? image->strtab + vernaux->vna_name : NULL;
      if (vernaux->vna_next == 0) break;
      aux += vernaux->vna_next;
    }
    if (entry->vn_next == 0) break;
    need += entry->vn_next;
  }
  const char *def = (const char *)image->verdef;
  for (size_t n = 0; def && n < image->verdefnum; n++) {
    const ElfW(Verdef) *entry = (const ElfW(Verdef) *)def;
    if (!contains_span(image, entry, sizeof *entry)) return NULL;
    if (entry->vd_ndx == wanted && entry->vd_cnt > 0) {
      const ElfW(Verdaux) *verdaux = (const ElfW(Verdaux) *)(def + entry->vd_aux);
      if (!contains_span(image, verdaux, sizeof *verdaux)) return NULL;
      return verdaux->vda_name < image->strsz ? image->strtab + verdaux->vda_name : NULL;
    }
    if (entry->vd_next == 0) break;
    def += entry->vd_next;
  }
  return NULL;
}

bool eh_image_is_canonical_plt(const eh_image *image, uintptr_t address) {
  if (!image->has_canonical_plt || !eh_image_contains(image, address)) return false;
  return bsearch(&address, image->canonical_plts, image->canonical_plt_count, sizeof address, compare_addresses);
}

eh_image *eh_image_create(const struct dl_phdr_info *info, const void *engine_address) {
  eh_image *image = calloc(1, sizeof *image);
  if (!image) return NULL;
  image->load_bias = info->dlpi_addr;
  image->phdr = info->dlpi_phdr;
  image->phnum = info->dlpi_phnum;
  image->is_main_program = (uintptr_t)info->dlpi_phdr == getauxval(AT_PHDR);
  image->path = image_path(info, image->is_main_program);
  image->loader_name = strdup(info->dlpi_name ? info->dlpi_name : "");
  if (!image->path || !image->loader_name) {
    eh_image_destroy(image);
    return NULL;
  }
  read_program_headers(image);
  image->is_vdso = image->header && (uintptr_t)image->header == getauxval(AT_SYSINFO_EHDR);
  image->is_dynamic_linker = getauxval(AT_BASE) != 0 && info->dlpi_addr == getauxval(AT_BASE);
  image->is_engine = eh_image_contains(image, (uintptr_t)engine_address);
  image->parsed_ok = true;
  if (!image->header) malformed(image, "no PT_LOAD segment maps the ELF header");
  else parse_slots(image);
  if (!image->parsed_ok) {
    image->table_counts[0] = image->table_counts[1] = 0;
  }
  return image;
}

void eh_image_destroy(eh_image *image) {
  if (!image) return;
  free(image->unindexed_hashes);
  free(image->canonical_plts);
  free(image->path);
  free(image->loader_name);
  free(image);
}

void eh_image_public_view(const eh_image *image, elfhook_image *view) {
  view->path = image->path;
  view->load_bias = image->load_bias;
  view->header = image->header;
  view->is_main_program = image->is_main_program;
  view->is_engine = image->is_engine;
}
