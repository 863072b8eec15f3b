pub fn run(_a: &[String]) -> Result<(), crate::UsageError> {
    Ok(())
}
