//! `.stencil.toml` files on disk and the round trip through `to_toml` and `parse`.

use ndtune_stencil::{generate, reference, reference_names, Elem, Padding, Stencil, StencilError};
use proptest::prelude::*;
use std::path::Path;

#[test]
fn every_reference_stencil_loads_back_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in reference_names() {
        let stencil = reference(&name).unwrap();
        let path = dir.path().join(format!("{name}.stencil.toml"));
        std::fs::write(&path, stencil.to_toml()).unwrap();
        assert_eq!(Stencil::load(&path).unwrap(), stencil);
    }
}

#[test]
fn a_bad_file_is_named_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.stencil.toml");
    let text = reference("sobel")
        .unwrap()
        .to_toml()
        .replace("output = \"float\"", "output = \"half\"");
    std::fs::write(&path, text).unwrap();
    let err = Stencil::load(&path).unwrap_err();
    let StencilError::File { line, column, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!((*line, *column), (5, 10));
    assert!(err
        .to_string()
        .starts_with(&format!("{}:5:10: unknown variant `half`", path.display())));
}

proptest! {
    #[test]
    fn to_toml_round_trips_through_parse(
        seed in any::<u64>(),
        function in "[ -~\t\n]{1,80}",
        nearest in any::<bool>(),
        padding in -1000i32..1000,
    ) {
        let mut stencil = generate(seed, 1).remove(0);
        let original = stencil.clone();
        prop_assert_eq!(Stencil::parse(&stencil.to_toml(), Path::new("g.stencil.toml")).unwrap(),
            original);
        stencil.function = function;
        stencil.padding = match (nearest, stencil.input) {
            (true, _) => Padding::Nearest,
            (false, Elem::Int) => Padding::Constant(f64::from(padding)),
            (false, _) => Padding::Constant(f64::from(padding) / 8.0),
        };
        prop_assume!(stencil.check(64, 64).is_ok());
        let text = stencil.to_toml();
        prop_assert_eq!(Stencil::parse(&text, Path::new("p.stencil.toml")).unwrap(), stencil);
    }
}
