// The `elfhook` executable: everything lives in ElfHookCLI; this file only starts it.
import ElfHookCLI

ElfHookCommand.main()
