"""Input and output: points files to projected GeoDataFrames (metres); atomic output folders.

**The input pass.** Every points file (:func:`synthgeo.io.points.load_points`, behind every
command, the spec and :func:`synthgeo.read_points`) is checked once, in the order a reader would
check it; each step's checks live in one module, and the first refusal stops the pass
(docs/locations.md, "Units and plausibility"):

1. **file and arguments** (:mod:`~synthgeo.io.points`): option types, ``coord_unit_m``, the
   target CRS, CSV options (:class:`~synthgeo.io.files.CsvOptions`), the file exists;
2. **format, header and CRS given** (:mod:`~synthgeo.io.files`): suffix, x/y and CRS for a CSV
   or a layer's own CRS, encoding (UTF-16/32 named), separator, repeated names, rows longer
   than the header; then
   ``query`` selects rows (:mod:`~synthgeo.io.points`);
3. **columns** (:mod:`~synthgeo.io.columns`): present and named once, ids unique and not
   missing, numbers that are numbers (no text, NaN or inf);
4. **coordinates** (:mod:`~synthgeo.io.columns`): finite numbers, or non-empty Point
   geometries;
5. **units** (:mod:`~synthgeo.io.units`): the unit in effect, column names that state another,
   x and y swapped;
6. **plausible for the CRS** (:mod:`~synthgeo.io.plausibility`): lon/lat range, 0°/0°,
   projected bounds, area of use, every point next to an off-area CRS origin, UTM values
   under a world-wide CRS (unless a study area is declared); then the declared study area
   (:mod:`~synthgeo.io.where`, optional: any point outside it refused);
7. **duplicates and count** (:mod:`~synthgeo.io.columns`): exact duplicate rows reported
   (dropped if asked), then ``min_records``;
8. **projection to metres** (:mod:`~synthgeo.io.crs`): UTM, local or the target CRS;
9. **extent** (:mod:`~synthgeo.io.plausibility`): the small-extent rule, in metres; then land
   or sea (:mod:`~synthgeo.io.where`: more than half of the points over the sea refused unless
   ``accept_offshore``).

Steps 3–9 are :func:`synthgeo.io.checks.check_points`, which a GeoDataFrame handed over in
memory gets too (:func:`synthgeo.io.read.check_points_frame`; only the words differ,
:class:`~synthgeo.io.origin.Origin`). Warnings that survive are kept, coded, in
``attrs["warnings"]`` (:mod:`~synthgeo.io.notices`).
"""
