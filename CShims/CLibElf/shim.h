// libelf (elfutils) for Swift: the on-disk ELF reader behind `ElfFile`.
// Debian package: libelf-dev.
#include <libelf.h>
#include <gelf.h>
