//! Reading a cubin as the ELF file it is, for the tests of real builds.

use object::{Object, ObjectSymbol, SymbolKind};

/// The functions a cubin defines, read as the ELF file it is.
pub fn functions(cubin: &[u8]) -> Vec<String> {
    let file = object::File::parse(cubin).expect("a cubin is an ELF file");
    assert_eq!(
        file.architecture(),
        object::Architecture::Unknown,
        "a cubin is for NVIDIA's GPUs, which `object` names no CPU architecture"
    );
    file.symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

/// The architecture a cubin is for, from its ELF header's `e_flags` (bytes 48-51 of an ELF64
/// file, little-endian). CUDA 13's cubins (OS ABI `0x41`) hold the SM number in bits 8-15
/// (`0x6005a04`: sm_90), older ones (OS ABI `0x33`, CUDA's) in bits 0-7 (`0x5a055a`).
pub fn sm_of(cubin: &[u8]) -> u32 {
    assert_eq!(&cubin[..5], b"\x7fELF\x02", "an ELF64 file");
    let flags = u32::from_le_bytes(cubin[48..52].try_into().unwrap());
    match cubin[7] {
        0x41 => (flags >> 8) & 0xff,
        0x33 => flags & 0xff,
        other => panic!("a cubin's OS ABI is 0x41 or 0x33, not {other:#x}"),
    }
}
