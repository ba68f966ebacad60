//! Every input that found a bug, fuzzing or by hand (issue 22), run through its target's
//! property: each of these once panicked or broke the property.

use ndtune_fuzz::props;

#[test]
fn expressions() {
    // A character of three or four bytes where the lexer looked at two bytes for an operator:
    // the slice cut the character and panicked.
    for text in ["ઃ", "X < ઃ", "€", "1 + 🕴", "ઃ¤ল=ꬊ🕴>¥ᰢ<"] {
        props::expr(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

#[test]
fn spec_files() {
    // toml names no cause for a bare carriage return: the error had an empty message.
    for text in ["\r", "\rx = 1", "[kernel]\rname = \"k\""] {
        props::spec(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

const HEAD: &str = "scenario,device,kernel,dataset,wg_c,wg_r,runtime_ms,status,f_a\n";

#[test]
fn learning_csv() {
    let cases = [
        // Naive Bayes predicted NaN for a feature of 1e308 and panicked (issue 22; found again
        // by fuzzing with the clamp of standardised features taken out).
        format!("{HEAD}s0,d0,syn0,64x64,1,1,0.0100,measured,0\ns1,d1,syn1,128x64,1,2,9.3318,measured,0\n"),
        format!("{HEAD}s0,d0,k,64x64,8,8,1,measured,1e308\ns1,d1,k,64x64,8,8,2,measured,-1e308\ns2,d1,k,64x64,16,4,1,measured,0\n"),
        // Run times of zero or less (NonFiniteTarget panicked in the regressor).
        format!("{HEAD}s0,d0,k,64x64,8,8,0,measured,1\ns1,d1,k,64x64,8,8,2,measured,2\n"),
        format!("{HEAD}s0,d0,k,64x64,8,8,-1,measured,1\ns1,d1,k,64x64,8,8,2,measured,2\n"),
        // Work-group sizes of 0, -4, 32.5 were taken (as 0, 0 and 32).
        format!("{HEAD}s0,d0,k,64x64,0,8,1,measured,1\n"),
        format!("{HEAD}s0,d0,k,64x64,-4,8,1,measured,1\n"),
        format!("{HEAD}s0,d0,k,64x64,32.5,8,1,measured,1\n"),
        // One row, one scenario: 0 folds and a table of NaN.
        format!("{HEAD}s0,d0,k,64x64,8,8,1,measured,1\n"),
    ];
    for text in &cases {
        props::learn_csv(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

#[test]
fn service_requests() {
    let service = props::LocalService::start();
    // Features near ±1e308 made the naive-Bayes handler panic; three observations of them a
    // retrained model that panicked on every prediction (issue 22).
    let extreme: serde_json::Map<String, serde_json::Value> = service
        .known
        .names
        .iter()
        .enumerate()
        .map(|(j, n)| {
            (
                n.to_string(),
                (if j % 2 == 0 { 1.7e308 } else { -1.7e308 }).into(),
            )
        })
        .collect();
    let limits = serde_json::json!({"max_work_group_size": 1024, "max_work_item_sizes": [1024, 1024],
        "local_mem_size": 49152, "border": [1, 1, 1, 1], "input_bytes": 4});
    let scenario = serde_json::json!({"features": extreme, "limits": limits});
    service
        .property("POST", "/v1/predict", scenario.to_string().into_bytes())
        .unwrap();
    for local in [[16, 16], [8, 8], [32, 4]] {
        let body = serde_json::json!({"scenario": scenario, "local": local, "runtime_ms": 1.0});
        service
            .property("POST", "/v1/observe", body.to_string().into_bytes())
            .unwrap();
    }
    // Limits at the edges of u64 overflowed the tile's size in the legality check.
    let mut huge = scenario.clone();
    huge["limits"]["input_bytes"] = u64::MAX.into();
    huge["limits"]["border"] = serde_json::json!([u32::MAX, u32::MAX, u32::MAX, u32::MAX]);
    service
        .property("POST", "/v1/predict", huge.to_string().into_bytes())
        .unwrap();
}

#[test]
fn service_kernels() {
    // An unclosed comment between `#` and a directive's name (the scan skips comments there
    // since issue 51): the scan read past the source's end and panicked.
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.h");
    std::fs::write(&secret, "int secret;\n").unwrap();
    for source in [
        "#/*define W 4\nkernel void k(global float *a) { a[0] = 1.0f; }\n",
        "#/*",
        "%:/* x",
    ] {
        props::request_kernel(&secret, source, "").unwrap_or_else(|e| panic!("{source:?}: {e}"));
    }
}
