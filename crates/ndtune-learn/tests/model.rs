//! Saved models: training from CSV data, predicting with the legality fallback, and training
//! again with observed scenarios (online learning).

use ndtune_learn::data::Data;
use ndtune_learn::model::{Model, TrainingRow};
use ndtune_learn::models::ClassifierKind;
use std::path::Path;

/// Six scenarios, two by two with oracles 8x8, 16x4 and 32x8 (lowest runtime), apart in `f_a`
/// (the tree needs two rows per leaf).
fn data() -> Data {
    let mut csv =
        String::from("scenario,device,kernel,dataset,f_a,f_b,wg_c,wg_r,runtime_ms,status\n");
    for (s, a, best) in [
        ("s1", 1.0, (8, 8)),
        ("s1b", 1.5, (8, 8)),
        ("s2", 5.0, (16, 4)),
        ("s2b", 5.5, (16, 4)),
        ("s3", 9.0, (32, 8)),
        ("s3b", 9.5, (32, 8)),
    ] {
        for wg in [(8, 8), (16, 4), (32, 8)] {
            let t = if wg == best { 1.0 } else { 2.0 };
            csv.push_str(&format!("{s},d,k,x,{a},0,{},{},{t},measured\n", wg.0, wg.1));
        }
    }
    Data::read(csv.as_bytes(), Path::new("t.csv")).unwrap()
}

#[test]
fn a_trained_model_keeps_its_rows_and_predicts_its_oracles() {
    let model = Model::train(&data(), ClassifierKind::DecisionTree, 1).unwrap();
    assert_eq!(model.training.len(), 6);
    let oracles: Vec<_> = model.training.iter().map(|t| t.oracle).collect();
    assert_eq!(
        oracles,
        vec![(8, 8), (8, 8), (16, 4), (16, 4), (32, 8), (32, 8)]
    );
    for t in &model.training {
        let p = model.predict_row(&t.features, |_| true).unwrap().unwrap();
        assert_eq!((p.wg, p.fell_back), (t.oracle, false));
    }
    // 32x8 illegal: the nearest legal size the model knows.
    let p = model
        .predict_row(&[9.0, 0.0], |w| w != (32, 8))
        .unwrap()
        .unwrap();
    assert_eq!((p.wg, p.fell_back), ((16, 4), true));
    assert_eq!(model.predict_row(&[9.0, 0.0], |_| false).unwrap(), None);
}

#[test]
fn retraining_adds_new_scenarios_and_sizes_and_replaces_known_ones() {
    let model = Model::train(&data(), ClassifierKind::DecisionTree, 1).unwrap();
    let row = |a: f64, oracle| TrainingRow {
        features: vec![a, 0.0],
        oracle,
    };
    let observed = [
        // Two new scenarios with a size the model has never seen.
        row(20.0, (64, 4)),
        row(20.5, (64, 4)),
        // s1 and s1b observed again, with another best size.
        row(1.0, (16, 4)),
        row(1.5, (16, 4)),
    ];
    let again = model.retrained(&observed, 1).unwrap();
    assert_eq!(again.training.len(), 8, "s1, s1b replaced, two rows added");
    assert!(again.classes.contains(&(64, 4)) && again.ranking.contains(&(64, 4)));
    assert_eq!(
        again
            .predict_row(&[20.0, 0.0], |_| true)
            .unwrap()
            .unwrap()
            .wg,
        (64, 4)
    );
    assert_eq!(
        again
            .predict_row(&[1.0, 0.0], |_| true)
            .unwrap()
            .unwrap()
            .wg,
        (16, 4)
    );
    assert_eq!(again.classifier.kind(), ClassifierKind::DecisionTree);
    // The original is untouched.
    assert_eq!(
        model
            .predict_row(&[1.0, 0.0], |_| true)
            .unwrap()
            .unwrap()
            .wg,
        (8, 8)
    );
}

#[test]
fn a_saved_model_loads_back_and_predicts_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    let model = Model::train(&data(), ClassifierKind::RandomForest, 3).unwrap();
    model.save(&path).unwrap();
    let loaded = Model::load(&path).unwrap();
    assert_eq!(loaded.training, model.training);
    for x in [0.0, 3.0, 5.5, 11.0] {
        assert_eq!(
            loaded.predict_row(&[x, 0.0], |_| true).unwrap(),
            model.predict_row(&[x, 0.0], |_| true).unwrap()
        );
    }
}

#[test]
fn a_model_file_that_does_not_check_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    let model = Model::train(&data(), ClassifierKind::Svm, 3).unwrap();
    model.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let broken = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = json.clone();
        edit(&mut v);
        std::fs::write(&path, v.to_string()).unwrap();
        Model::load(&path).unwrap_err().to_string()
    };
    let e = broken(&|v| v["classifier"]["scaler"]["scale"][0] = 0.0.into());
    assert!(
        e.contains("m.json: a broken model: the scaler's statistics"),
        "{e}"
    );
    let e = broken(&|v| v["classes"] = serde_json::json!([[8, 8]]));
    assert!(e.contains("the classifier knows class"), "{e}");
    let e = broken(&|v| v["classes"][0] = serde_json::json!([0, 8]));
    assert!(e.contains("its classes are not work-group sizes"), "{e}");
    let e = broken(&|v| v["training"][2]["features"] = serde_json::json!([1.0]));
    assert!(e.contains("training row 2 is not 2 finite numbers"), "{e}");
    let e = broken(&|v| {
        v["classifier"]["model"]["Svm"][0]["w"] = serde_json::json!([1.0]);
    });
    assert!(
        e.contains("a hyperplane that is not 2 finite numbers"),
        "{e}"
    );
    // The file as saved loads.
    json["ndtune_version"] = "0.0.0".into();
    std::fs::write(&path, json.to_string()).unwrap();
    assert!(Model::load(&path).is_ok());
}

#[test]
fn the_reach_of_a_model_widens_its_training_range_by_ten_times_its_magnitude() {
    let model = Model::train(&data(), ClassifierKind::DecisionTree, 1).unwrap();
    let reach = model.reach();
    // f_a from 1 to 9.5: up to 9.5 + 95; never negative in training: not below 0.
    assert_eq!(reach.bounds(0), Some((0.0, 104.5)));
    // f_b always 0: magnitude at least 1.
    assert_eq!(reach.bounds(1), Some((0.0, 10.0)));
    assert_eq!(reach.outside(&[100.0, 10.0]), None);
    assert_eq!(reach.outside(&[1e308, 0.0]), Some((0, (0.0, 104.5))));
    assert_eq!(reach.outside(&[1.0, -1.0]), Some((1, (0.0, 10.0))));
    assert_eq!(reach.outside(&[f64::NAN, 0.0]), Some((0, (0.0, 104.5))));
}

#[test]
fn a_model_of_a_collection_for_another_objective_keeps_it_and_mixed_objectives_are_refused() {
    let mut csv =
        String::from("scenario,device,kernel,dataset,f_a,wg_c,wg_r,cost,status,objective\n");
    for (s, a, best) in [
        ("s1", 1.0, (8, 8)),
        ("s1b", 1.5, (8, 8)),
        ("s2", 5.0, (16, 4)),
        ("s2b", 5.5, (16, 4)),
    ] {
        for wg in [(8, 8), (16, 4)] {
            let cost = if wg == best { 0.5 } else { 3.0 };
            csv.push_str(&format!(
                "{s},d,k,x,{a},{},{},{cost},measured,energy_j (lower is better)\n",
                wg.0, wg.1
            ));
        }
    }
    let data = Data::read(csv.as_bytes(), Path::new("e.csv")).unwrap();
    assert_eq!(
        data.objective.as_deref(),
        Some("energy_j (lower is better)")
    );
    let model = Model::train(&data, ClassifierKind::DecisionTree, 1).unwrap();
    let oracles: Vec<_> = model.training.iter().map(|t| t.oracle).collect();
    assert_eq!(oracles, [(8, 8), (8, 8), (16, 4), (16, 4)], "least cost");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    model.save(&path).unwrap();
    let loaded = Model::load(&path).unwrap();
    assert_eq!(loaded.objective, model.objective);
    let again = loaded.retrained(&[], 1).unwrap();
    assert_eq!(
        again.objective.as_deref(),
        Some("energy_j (lower is better)")
    );
    // A model file written before objectives were kept is a model of run times.
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("objective");
    std::fs::write(&path, old.to_string()).unwrap();
    assert_eq!(Model::load(&path).unwrap().objective, None);

    let mixed = csv.replacen(
        ",energy_j (lower is better)\n",
        ",time (lower is better)\n",
        1,
    );
    let e = Data::read(mixed.as_bytes(), Path::new("e.csv")).unwrap_err();
    assert!(e.to_string().starts_with("e.csv:3: column `objective`: `energy_j (lower is better)`, where the rows before say `time (lower is better)`"), "{e}");
    // Its costs are required where it names an objective.
    let e = Data::read(
        csv.replace(",cost,", ",runtime_ms,").as_bytes(),
        Path::new("e.csv"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "e.csv: no column `cost` (the format is in docs/collect.md)"
    );
}
