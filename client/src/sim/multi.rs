//! Multi-op requests: [`MultiWriter`] (all ops or none; a failing op is
//! reported with its index), [`CheckWriter`] (a multi guarded by a version
//! check, errors mapped as the real crate's `From` impls do) and
//! [`MultiReader`] (reads answered together, each with its own result).

use super::client::Client;
use super::errors::{from_zk, unexpected_reply};
use super::types::CreateOptions;
use super::{
    convert, CheckWriteError, Error, MultiReadResult, MultiWriteError, MultiWriteResult, Stat,
};
use std::future::Future;
use zk_recipes::zk::{self, MultiOp, OpResult, ReadOp, ReadResult, Request, ZkError};

type Result<T, E = Error> = std::result::Result<T, E>;

/// The multi builders a [`Client`] hands out (here, beside them).
impl Client {
    /// A [`MultiWriter`].
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter::new(self)
    }

    /// A [`CheckWriter`]: a multi whose first op checks `path`'s version.
    pub fn new_check_writer(&self, path: &str, version: Option<i32>) -> Result<CheckWriter<'_>> {
        let mut writer = self.new_multi_writer();
        writer.add_check_version(path, version.unwrap_or(zk::ANY_VERSION))?;
        Ok(CheckWriter::new(writer))
    }

    /// A [`MultiReader`]: reads committed together.
    pub fn new_multi_reader(&self) -> MultiReader<'_> {
        MultiReader::new(self)
    }
}

/// Collects write and check ops to commit in one request.
pub struct MultiWriter<'a> {
    client: &'a Client,
    ops: Vec<MultiOp>,
}

impl<'a> MultiWriter<'a> {
    pub(crate) fn new(client: &'a Client) -> MultiWriter<'a> {
        MultiWriter {
            client,
            ops: Vec::new(),
        }
    }

    /// Adds a check of a node's data version.
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        let path = self.client.server_path(path)?;
        self.ops.push(MultiOp::Check { path, version });
        Ok(())
    }

    /// Adds a create (see [`Client::create`]).
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        let path = self.client.create_path(path, options)?;
        self.ops.push(MultiOp::Create {
            path,
            data: data.to_vec(),
            mode: options.zk_mode(),
            acl: options.zk_acl(),
        });
        Ok(())
    }

    /// Adds a set_data (see [`Client::set_data`]).
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        let path = self.client.server_path(path)?;
        self.ops.push(MultiOp::SetData {
            path,
            data: data.to_vec(),
            version: expected_version.unwrap_or(zk::ANY_VERSION),
        });
        Ok(())
    }

    /// Adds a delete (see [`Client::delete`]).
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        let path = self.client.delete_path(path)?;
        self.ops.push(MultiOp::Delete {
            path,
            version: expected_version.unwrap_or(zk::ANY_VERSION),
        });
        Ok(())
    }

    /// Commits the collected ops (sent now): every result, or the first
    /// failing op's index and error. No op: no request, no result.
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'a {
        let ops = std::mem::take(&mut self.ops);
        let sent = (!ops.is_empty()).then(|| self.client.submit(Request::Multi(ops)));
        let root = self.client.root.clone();
        async move {
            let Some(sent) = sent else {
                return Ok(Vec::new());
            };
            let (reply, _) = sent.outcome().await.map_err(multi_error)?;
            let zk::Reply::Multi(results) = reply else {
                return Err(unexpected_reply("MultiWriter::commit", &reply).into());
            };
            results
                .into_iter()
                .map(|result| write_result(result, &root).map_err(MultiWriteError::from))
                .collect()
        }
    }

    /// Clears the collected ops.
    pub fn abort(&mut self) {
        self.ops.clear();
    }
}

fn multi_error(error: ZkError) -> MultiWriteError {
    match error {
        ZkError::MultiFailed { index, error } => MultiWriteError::OperationFailed {
            index,
            source: from_zk(*error),
        },
        other => MultiWriteError::RequestFailed {
            source: from_zk(other),
        },
    }
}

fn write_result(result: OpResult, root: &super::paths::Root) -> Result<MultiWriteResult> {
    Ok(match result {
        // ZooKeeper 3.8 answers a create inside a multi as a plain create,
        // without its stat (ZOOKEEPER-4026): the crate reports an invalid one.
        OpResult::Created { path, .. } => MultiWriteResult::Create {
            path: root.strip(path.as_str())?,
            stat: invalid_stat(),
        },
        OpResult::Deleted => MultiWriteResult::Delete,
        OpResult::DataSet(stat) => MultiWriteResult::SetData {
            stat: convert::stat(stat),
        },
        OpResult::Checked => MultiWriteResult::Check,
    })
}

/// The stat the crate reports when the server sent none (`Stat::is_invalid`).
fn invalid_stat() -> Stat {
    Stat {
        czxid: -1,
        mzxid: -1,
        pzxid: -1,
        ctime: 0,
        mtime: 0,
        version: -1,
        cversion: -1,
        aversion: -1,
        ephemeral_owner: 0,
        data_length: 0,
        num_children: 0,
    }
}

/// A [`MultiWriter`] whose first op is a path check, reported apart.
pub struct CheckWriter<'a> {
    writer: MultiWriter<'a>,
}

impl<'a> CheckWriter<'a> {
    pub(crate) fn new(writer: MultiWriter<'a>) -> CheckWriter<'a> {
        CheckWriter { writer }
    }

    /// Same as [`MultiWriter::add_check_version`].
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        self.writer.add_check_version(path, version)
    }

    /// Same as [`MultiWriter::add_create`].
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        self.writer.add_create(path, data, options)
    }

    /// Same as [`MultiWriter::add_set_data`].
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        self.writer.add_set_data(path, data, expected_version)
    }

    /// Same as [`MultiWriter::add_delete`].
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        self.writer.add_delete(path, expected_version)
    }

    /// Commits: the results after the check's, or CheckFailed if the check
    /// failed, or the failing op's index counted after the check.
    pub fn commit(
        mut self,
    ) -> impl Future<Output = Result<Vec<MultiWriteResult>, CheckWriteError>> + Send + 'a {
        let commit = self.writer.commit();
        async move {
            let mut results = commit.await?;
            if results.is_empty() {
                return Err(CheckWriteError::RequestFailed {
                    source: Error::UnexpectedError("expect path check, got none".to_string()),
                });
            }
            match results.remove(0) {
                MultiWriteResult::Check => Ok(results),
                other => Err(CheckWriteError::RequestFailed {
                    source: Error::UnexpectedError(format!(
                        "expect MultiWriteResult::Check, got {other:?}"
                    )),
                }),
            }
        }
    }
}

/// Collects reads to commit in one request: each read answered alone (no
/// watch), a failed read its own [`MultiReadResult::Error`].
pub struct MultiReader<'a> {
    client: &'a Client,
    reads: Vec<ReadOp>,
}

impl<'a> MultiReader<'a> {
    pub(crate) fn new(client: &'a Client) -> MultiReader<'a> {
        MultiReader {
            client,
            reads: Vec::new(),
        }
    }

    /// Adds a get_data (path checked now).
    pub fn add_get_data(&mut self, path: &str) -> Result<()> {
        let path = self.client.server_path(path)?;
        self.reads.push(ReadOp::GetData { path });
        Ok(())
    }

    /// Adds a get_children (path checked now).
    pub fn add_get_children(&mut self, path: &str) -> Result<()> {
        let path = self.client.server_path(path)?;
        self.reads.push(ReadOp::GetChildren { path });
        Ok(())
    }

    /// Commits the collected reads (sent now): one result per read, in
    /// order. No read: no request, no result.
    pub fn commit(&mut self) -> impl Future<Output = Result<Vec<MultiReadResult>>> + Send + 'a {
        let reads = std::mem::take(&mut self.reads);
        let sent = (!reads.is_empty()).then(|| self.client.submit(Request::MultiRead(reads)));
        async move {
            let Some(sent) = sent else {
                return Ok(Vec::new());
            };
            let (reply, _) = sent.outcome().await.map_err(from_zk)?;
            let zk::Reply::MultiRead(results) = reply else {
                return Err(unexpected_reply("MultiReader::commit", &reply));
            };
            Ok(results.into_iter().map(read_result).collect())
        }
    }

    /// Clears the collected reads.
    pub fn abort(&mut self) {
        self.reads.clear();
    }
}

/// One read's result as the real crate gives it.
fn read_result(result: ReadResult) -> MultiReadResult {
    match result {
        ReadResult::Data { data, stat } => MultiReadResult::Data {
            data,
            stat: convert::stat(stat),
        },
        ReadResult::Children(children) => MultiReadResult::Children { children },
        ReadResult::Error(error) => MultiReadResult::Error {
            err: from_zk(error),
        },
    }
}
