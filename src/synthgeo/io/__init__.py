"""Input and output: points files to projected GeoDataFrames (metres); atomic output folders."""
