"""File-based sources: TFRecord and text-line readers, list_files, and TFRecordWriter.

Every reader is a dataset whose only input is a dataset of file names (see ``_reader``).
"""

from distribute.data.readers.fixed_length import FixedLengthRecordDataset
from distribute.data.readers.list_files import list_files
from distribute.data.readers.text_line import TextLineDataset
from distribute.data.readers.tfrecord import TFRecordDataset
from distribute.data.readers.tfrecord_writer import TFRecordWriter

__all__ = ["FixedLengthRecordDataset", "TFRecordDataset", "TFRecordWriter", "TextLineDataset", "list_files"]
