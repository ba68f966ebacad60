//! The fuzz targets, a bounded time each (`NDTUNE_FUZZ_SECONDS`, 2 s by default): see the
//! crate's documentation.

use ndtune_fuzz::{fuzz, gen, props};

#[test]
fn spec_files() {
    fuzz("spec", gen::spec(), |text| props::spec(&text));
}

#[test]
fn expressions() {
    fuzz("expr", gen::expr(), |text| props::expr(&text));
}

#[test]
fn learning_csv() {
    fuzz("learn-csv", gen::learn_csv(), |text| {
        props::learn_csv(&text)
    });
}

#[test]
fn kernel_tuner_caches() {
    fuzz("kt-cache", gen::kt_cache(), |bytes| props::kt_cache(&bytes));
}

#[test]
fn cltune_tables() {
    fuzz("cltune", gen::cltune(), |bytes| props::cltune(&bytes));
}

#[test]
fn service_requests() {
    let service = props::LocalService::start();
    fuzz("serve", gen::serve_request(service.known), |r| {
        service.property(r.method, r.path, r.body)
    });
}
