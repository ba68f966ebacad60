//! Launch-configuration spaces: parameters and their domains, the constraint language, the
//! platform model of Erdem et al. 2018 (eq. 1-3) and the pruner, plus the MiniZinc export of the
//! same model, and [`lazy::ValidSpace`]: the valid configurations counted, ranked, unranked and
//! sampled without listing them. Pure: no OpenCL, no files.
pub mod compile;
pub mod domain;
pub mod expr;
pub mod lazy;
pub mod listing;
pub mod mzn;
pub mod platform;
pub mod problem;
pub mod resolve;
pub mod space;
